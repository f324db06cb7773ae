package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// SweepPrivateDirs removes the private directories under base of the
// sessions over says are over, and returns those sessions. A directory
// whose name is not a session id as PrivateDir writes it, or that is not
// a real directory, is left alone, as is every session over cannot tell
// about (its error is returned with the others).
func SweepPrivateDirs(base string, over func(session string) (bool, error)) (removed []string, err error) {
	entries, err := os.ReadDir(base)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("private sandbox directories: %w", err)
	}
	var errs []error
	for _, e := range entries {
		session := e.Name()
		if !e.IsDir() || safeName(session) != session {
			continue
		}
		done, err := over(session)
		if err != nil {
			errs = append(errs, fmt.Errorf("session %s: %w", session, err))
			continue
		}
		if !done {
			continue
		}
		if err := RemoveTree(filepath.Join(base, session)); err != nil {
			errs = append(errs, fmt.Errorf("session %s is over, but its private sandbox directory could not be removed: %w (remove it by hand)", session, err))
			continue
		}
		removed = append(removed, session)
	}
	return removed, errors.Join(errs...)
}
