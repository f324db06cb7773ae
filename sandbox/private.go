package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
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
	if err := os.MkdirAll(base, 0o711); err != nil {
		return "", fmt.Errorf("sandbox directory: %v", err)
	}
	_ = os.Chmod(base, 0o711)
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

// RemovePrivateDir removes a session's private directory under base (its
// HOME, TMPDIR and caches); there being none is not an error.
func RemovePrivateDir(base, session string) error {
	if session == "" {
		return nil
	}
	return RemoveTree(filepath.Join(base, safeName(session)))
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
