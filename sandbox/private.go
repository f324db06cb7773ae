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
func PrivateDir(base, session string, uid, gid int) (string, error) {
	if session == "" {
		return "", fmt.Errorf("a private directory needs a session id")
	}
	if err := os.MkdirAll(base, 0o711); err != nil {
		return "", fmt.Errorf("sandbox directory: %v", err)
	}
	_ = os.Chmod(base, 0o711)
	dir := filepath.Join(base, safeName(session))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("sandbox directory: %v", err)
	}
	for _, sub := range PrivateSubdirs {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o700); err != nil {
			return "", fmt.Errorf("sandbox directory: %v", err)
		}
	}
	if os.Geteuid() == 0 {
		err := filepath.WalkDir(dir, func(p string, _ os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			return os.Lchown(p, uid, gid)
		})
		if err != nil {
			return "", fmt.Errorf("sandbox directory: %v", err)
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
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = os.Chmod(p, 0o700)
		}
		return nil
	})
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
