package pgtest

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// dirPrefix names the temporary directories servers are started in.
const dirPrefix = "agentloop-pg-"

// ownerLock is the file in a server's directory that its starter holds
// locked (flock) for as long as it runs. The kernel lets go of the lock
// when the starter exits, killed or not, so a directory whose lock can be
// taken was left by a starter that never stopped its server.
const ownerLock = "owner.lock"

// unlockedAge is how old a directory without a lock file must be before
// it counts as left behind: a starter killed between making the directory
// and taking the lock, or one from before the lock existed. A starter
// alive takes its lock right after making the directory.
const unlockedAge = time.Hour

// lockOwner takes dir's owner lock for this process; closing the file
// lets it go. The lock is taken on a file of another name, which then
// becomes the lock file: a sweep never finds it unlocked.
func lockOwner(dir string) (*os.File, error) {
	taking := filepath.Join(dir, ownerLock+".new")
	f, err := os.OpenFile(taking, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, err
	}
	if err := os.Rename(taking, filepath.Join(dir, ownerLock)); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// removeAbandoned removes, from tmp, the directories of servers whose
// starters were killed (a test binary interrupted or timed out, a
// benchmark stopped): about 40 MB each. A directory whose owner holds its
// lock is left alone, whichever process that is.
func removeAbandoned(tmp string) {
	entries, _ := os.ReadDir(tmp)
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), dirPrefix) {
			continue // a symlink planted under the name is not followed
		}
		dir := filepath.Join(tmp, e.Name())
		// No FIFO planted under the lock's name blocks the open.
		f, err := os.OpenFile(filepath.Join(dir, ownerLock), os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
		if errors.Is(err, os.ErrNotExist) {
			if fi, err := os.Lstat(dir); err == nil && fi.IsDir() && time.Since(fi.ModTime()) > unlockedAge {
				os.RemoveAll(dir)
			}
			continue
		}
		if err != nil {
			continue // not ours to read
		}
		// Taken: nobody holds it, its starter is gone. It is held while
		// the directory goes, so two sweeps do not race.
		if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() && syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil {
			os.RemoveAll(dir)
		}
		f.Close()
	}
}
