package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// PrivateDir makes the session's private directory under base (HOME,
// TMPDIR and caches point there) and returns it. When agentloop runs as
// root the directory belongs to the sandbox user, mode 0700: no other
// uid reads it, and Landlock or bwrap keep other sessions (same uid) out.
// base itself is 0711, so its entries cannot be listed.
//
// A resumed session's directory already holds what its commands wrote.
// Only the directory and its named subdirectories are given to the
// sandbox user, each checked to be a real directory: nothing its commands
// planted there (a symlink to /etc, say) is followed or handed over.
func PrivateDir(base, session string, uid, gid int) (string, error) {
	if session == "" {
		return "", fmt.Errorf("a private directory needs a session id")
	}
	if err := makeBase(base); err != nil {
		return "", err
	}
	return makeSessionDir(base, session, uid, gid)
}

// makeSessionDir makes the session's directory and its named
// subdirectories in base (made already, by makeBase), as PrivateDir says.
func makeSessionDir(base, session string, uid, gid int) (string, error) {
	dir := filepath.Join(base, safeName(session))
	paths := []string{dir}
	for _, sub := range PrivateSubdirs {
		paths = append(paths, filepath.Join(dir, sub))
	}
	for _, p := range paths {
		if err := os.Mkdir(p, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return "", fmt.Errorf("sandbox directory: %v", err)
		}
		if fi, err := os.Lstat(p); err != nil || !fi.IsDir() {
			return "", fmt.Errorf("sandbox directory: %s is not a directory (%v): remove it, or the session's whole private directory %s", p, err, dir)
		}
		if os.Geteuid() == 0 {
			if err := os.Lchown(p, uid, gid); err != nil {
				return "", fmt.Errorf("sandbox directory: %v", err)
			}
		}
	}
	return dir, nil
}

// A session's private directory base/<id> has a lock file beside it,
// base/<id>.lock (a session id has no dot, so no directory is named so).
// A process running the session's commands holds it shared
// (UsePrivateDir); whoever removes the directory holds it exclusively
// from deciding to its end, and removes the lock file last. So nothing
// removes a directory in use, and a session that resumes while its
// directory goes waits, then gets it made again.

// lockFile is where session's lock file is.
func lockFile(base, session string) string {
	return filepath.Join(base, safeName(session)+".lock")
}

// UsePrivateDir is PrivateDir for a process about to run the session's
// commands: the directory is marked in use until release is called, and
// is not removed meanwhile (RemovePrivateDir, SweepPrivateDirs). While a
// removal holds it, this waits, until ctx ends.
func UsePrivateDir(ctx context.Context, base, session string, uid, gid int) (dir string, release func(), err error) {
	if session == "" {
		return "", nil, fmt.Errorf("a private directory needs a session id")
	}
	if err := makeBase(base); err != nil {
		return "", nil, err
	}
	f, err := lockSession(ctx, base, session, syscall.LOCK_SH)
	if err != nil {
		return "", nil, err
	}
	dir, err = makeSessionDir(base, session, uid, gid)
	if err != nil {
		f.Close()
		return "", nil, err
	}
	return dir, func() { f.Close() }, nil
}

// ErrPrivateDirInUse is returned (wrapped) by RemovePrivateDir for a
// directory a process on this machine uses.
var ErrPrivateDirInUse = errors.New("a process on this machine still uses it")

// lockSession opens session's lock file, making it if need be, and flocks
// it (how: LOCK_SH to use the directory, LOCK_EX to remove it, with
// LOCK_NB not to wait; without it, it waits until ctx ends). A lock file
// removed while this waited for it is let go and the new one locked.
func lockSession(ctx context.Context, base, session string, how int) (*os.File, error) {
	p := lockFile(base, session)
	for range 100 {
		// A link or a FIFO under the name is neither followed nor
		// waited on.
		f, err := os.OpenFile(p, os.O_RDONLY|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0o600)
		if err != nil {
			return nil, fmt.Errorf("sandbox directory lock: %w", err)
		}
		if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
			f.Close()
			return nil, fmt.Errorf("sandbox directory lock %s is not a regular file: remove it", p)
		}
		if err := flockUntil(ctx, f, how); err != nil {
			f.Close()
			return nil, fmt.Errorf("sandbox directory lock %s: %w", p, err)
		}
		held, err1 := f.Stat()
		now, err2 := os.Lstat(p)
		if err1 == nil && err2 == nil && os.SameFile(held, now) {
			return f, nil
		}
		f.Close() // removed with its directory meanwhile
	}
	return nil, fmt.Errorf("sandbox directory lock %s: replaced each time it was locked; is something else removing it?", p)
}

// flockUntil flocks f as how says; without LOCK_NB it tries again, more
// and more slowly, until it gets the lock or ctx ends (a blocking flock
// could not be given up).
func flockUntil(ctx context.Context, f *os.File, how int) error {
	if how&syscall.LOCK_NB != 0 {
		return syscall.Flock(int(f.Fd()), how)
	}
	for wait := time.Millisecond; ; wait = min(2*wait, 100*time.Millisecond) {
		err := syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("still being removed: %w", context.Cause(ctx))
		case <-time.After(wait):
		}
	}
}

// removeLocked removes session's directory and then its lock file, with
// the lock held exclusively; if when is set, only when it says so. It
// reports whether it removed them; a directory in use is not.
func removeLocked(base, session string, when func() (bool, error)) (bool, error) {
	f, err := lockSession(context.Background(), base, session, syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer f.Close()
	if when != nil {
		if ok, err := when(); err != nil || !ok {
			return false, err
		}
	}
	if err := RemoveTree(filepath.Join(base, safeName(session))); err != nil {
		return false, err
	}
	// Last, while still held: one waiting for it finds it gone and
	// takes the next.
	return true, os.Remove(f.Name())
}

// makeBase makes base, where private directories are made, if need be,
// and checks it is this user's (ownBase) and passable only (0711): its
// entries cannot be listed by the sandbox user.
func makeBase(base string) error {
	if err := os.MkdirAll(base, 0o711); err != nil {
		return fmt.Errorf("sandbox directory: %v", err)
	}
	if _, err := ownBase(base); err != nil {
		return err
	}
	if err := os.Chmod(base, 0o711); err != nil {
		return fmt.Errorf("sandbox directory: %v", err)
	}
	return nil
}

// ownBase checks that base, where private directories are made, is a
// directory of this process's user: another user who made it first (the
// default is a predictable name in /tmp) could reach sessions' files or
// have a sweep remove what a symlink points to.
func ownBase(base string) (fs.FileInfo, error) {
	fi, err := os.Lstat(base)
	if err != nil {
		return nil, fmt.Errorf("sandbox directory: %v", err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !fi.IsDir() || !ok || int(st.Uid) != os.Geteuid() {
		return nil, fmt.Errorf("sandbox directory %s is not a directory of this user (uid %d): another user may have made it to reach sessions' files; remove it, or point TMPDIR elsewhere", base, os.Geteuid())
	}
	return fi, nil
}

// RemovePrivateDir removes a session's private directory under base (its
// HOME, TMPDIR and caches); there being none is not an error. One a
// process on this machine uses (UsePrivateDir) is left, with
// ErrPrivateDirInUse.
func RemovePrivateDir(base, session string) error {
	if session == "" {
		return nil
	}
	if _, err := os.Lstat(base); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if _, err := ownBase(base); err != nil {
		return err
	}
	removed, err := removeLocked(base, session, nil)
	if err == nil && !removed {
		return fmt.Errorf("%s: %w", filepath.Join(base, safeName(session)), ErrPrivateDirInUse)
	}
	return err
}

// RemoveTree removes dir and everything in it, read-only directories
// included: Go's module cache, say, which a session's commands may fill
// in its private directory, is made unwritable on purpose, and os.RemoveAll
// cannot empty a directory its user may not write.
func RemoveTree(dir string) error {
	err := os.RemoveAll(dir)
	if err == nil || !errors.Is(err, fs.ErrPermission) {
		return err
	}
	// The directories are made writable through a Root: sandboxed
	// commands wrote this tree, and no symlink they planted or swap in
	// may lead a chmod outside it. Symlinks are not followed at all.
	root, rerr := os.OpenRoot(dir)
	if rerr != nil {
		return err
	}
	_ = fs.WalkDir(root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = root.Chmod(p, 0o700) // before WalkDir reads it
		}
		return nil
	})
	root.Close()
	return os.RemoveAll(dir)
}

// DefaultPrivateBase is where private directories are made by default.
func DefaultPrivateBase() string {
	return filepath.Join(os.TempDir(), fmt.Sprintf("agentloop-sandbox-%d", os.Geteuid()))
}

// safeName keeps a session id usable as one path element.
func safeName(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_':
			return r
		}
		return '_'
	}, s)
}
