package pgtest

import (
	"errors"
	"os"
	"path/filepath"
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
// lets it go.
func lockOwner(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, ownerLock), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
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
	dirs, _ := filepath.Glob(filepath.Join(tmp, dirPrefix+"*"))
	for _, dir := range dirs {
		f, err := os.Open(filepath.Join(dir, ownerLock))
		if errors.Is(err, os.ErrNotExist) {
			// A symlink planted under the name is removed, not followed.
			if fi, err := os.Lstat(dir); err == nil && fi.IsDir() && time.Since(fi.ModTime()) > unlockedAge {
				os.RemoveAll(dir)
			}
			continue
		}
		if err != nil {
			continue // not a directory, or not ours to read
		}
		// Taken: nobody holds it, its starter is gone. It is held while
		// the directory goes, so two sweeps do not race.
		if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil {
			os.RemoveAll(dir)
		}
		f.Close()
	}
}
