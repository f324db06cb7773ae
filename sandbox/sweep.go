package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// SweepPrivateDirs removes the private directories under base of the
// sessions over says are over, and returns those sessions. A directory a
// process on this machine uses (UsePrivateDir) is left alone without
// asking over, as is one whose name is not a session id as PrivateDir
// writes it, one that is not a real directory, and one of a session over
// cannot tell about (its error is returned with the others). A directory
// is held (its lock taken) from the question to its removal, so a session
// that resumes meanwhile waits, then gets it made again.
func SweepPrivateDirs(base string, over func(session string) (bool, error)) (removed []string, err error) {
	if _, err := os.Lstat(base); errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	fi, err := ownBase(base)
	if err != nil {
		return nil, err
	}
	if fi.Mode().Perm()&0o022 != 0 {
		return nil, fmt.Errorf("sandbox directory %s is writable by other users: not sweeping it; make it 0711", base)
	}
	entries, err := os.ReadDir(base)
	if err != nil {
		return nil, fmt.Errorf("sandbox directory %s: %w", base, err)
	}
	var errs []error
	dirs := map[string]bool{}
	for _, e := range entries {
		if e.IsDir() {
			dirs[e.Name()] = true
		}
	}
	for _, e := range entries {
		session := e.Name()
		if stem, ok := strings.CutSuffix(session, ".lock"); ok && e.Type().IsRegular() && safeName(stem) == stem && !dirs[stem] {
			// A lock file whose directory is gone (never made, or a
			// crash between the two removals) goes too, unless in use.
			dir := filepath.Join(base, stem)
			_, _ = removeLocked(base, stem, func() (bool, error) {
				_, err := os.Lstat(dir)
				return errors.Is(err, os.ErrNotExist), nil
			})
			continue
		}
		if !e.IsDir() || safeName(session) != session {
			continue
		}
		gone, err := removeLocked(base, session, func() (bool, error) { return over(session) })
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("session %s (%s): %w", session, filepath.Join(base, session), err))
		case gone:
			removed = append(removed, session)
		}
	}
	return removed, errors.Join(errs...)
}
