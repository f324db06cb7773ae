package checkpoint

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentloop/agentloop/internal/filelock"
	"github.com/agentloop/agentloop/internal/teststop"
)

// When a session's shadow repository goes.
//
// A fork's repository reads its original's snapshots in place: its
// objects/info/alternates lists, by absolute path, the objects of every
// repository up its chain (see Fork). So the rule, kept by sweep, is:
//
//	The repository of a deleted session (marked ROOT/ID.deleted by
//	Release, once the session's row is gone) is removed as soon as no
//	living repository — one without such a mark — lists it as an
//	alternate. One still listed stays, marked, and goes with the sweep
//	after the last living fork that lists it is deleted.
//
// Each fork lists its whole chain, so the living repositories' alternates
// alone say which repositories are needed; a marked one's list needs
// nothing.
//
// Crash safety: the mark is written only after the session's row is gone
// (the caller's duty), and a repository is removed only while it is
// marked and unlisted, its mark last; so a kill leaves at worst a
// repository nobody needs (marked: the next sweep removes it; unmarked: it
// stays), never a missing one that a living session reads. Removals hold
// the directory's lock exclusively and Save and Fork hold it shared, so a
// repository is not removed while a fork of it is being made, nor while
// a new session that reuses a deleted one's ID writes into it.

// deletedSuffix names the mark of a deleted session's repository.
const deletedSuffix = ".deleted"

func (s *Store) lockPath() string { return filepath.Join(s.Root, ".removal.lock") }

// lockRoot takes an advisory lock on ROOT/.removal.lock: shared for
// writers of repositories (Save, Fork), exclusive for removals, so no
// repository is removed while a process is writing or forking one — in
// this process or another on the machine. It waits for the other holders.
func (s *Store) lockRoot(exclusive bool) (unlock func(), err error) {
	unlock, err = filelock.Lock(s.lockPath(), exclusive)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: locking %s: %w", s.Root, err)
	}
	return unlock, nil
}

func (s *Store) markPath(sessionID string) string {
	return filepath.Join(s.Root, sessionID+deletedSuffix)
}

// Release is called once session sessionID is deleted (its row gone): its
// shadow repository is removed, now when no living fork reads it, else
// with the last such fork; and every other deleted session's repository
// that nothing living reads any more goes too.
func (s *Store) Release(sessionID string) error {
	if _, err := s.gitDir(sessionID); err != nil {
		return err
	}
	return s.removing(func() error {
		if err := os.WriteFile(s.markPath(sessionID), []byte(sessionID+"\n"), 0o600); err != nil {
			return fmt.Errorf("checkpoint: marking session %s's checkpoints as deleted in %s: %w", sessionID, s.Root, err)
		}
		return nil
	})
}

// Remove deletes the shadow repository of a session that was never
// recorded (a fork cut short, which nothing can have forked), then sweeps
// as Release does.
func (s *Store) Remove(sessionID string) error {
	dir, err := s.gitDir(sessionID)
	if err != nil {
		return err
	}
	return s.removing(func() error {
		if err := os.RemoveAll(dir); err != nil {
			return fmt.Errorf("checkpoint: removing %s: %w", dir, err)
		}
		return nil
	})
}

// removing runs remove, then a sweep, holding the directory's lock
// exclusively; with no checkpoints directory there is nothing to remove.
func (s *Store) removing(remove func() error) error {
	if _, err := os.Stat(s.Root); errors.Is(err, fs.ErrNotExist) {
		return nil // no checkpoints were ever kept here
	}
	unlock, err := s.lockRoot(true)
	if err != nil {
		return err
	}
	defer unlock()
	if err := remove(); err != nil {
		return err
	}
	return s.sweep()
}

// sweep removes every marked repository no living repository lists as an
// alternate, then its mark. The caller holds the lock exclusively.
func (s *Store) sweep() error {
	entries, err := os.ReadDir(s.Root)
	if err != nil {
		return fmt.Errorf("checkpoint: reading %s: %w", s.Root, err)
	}
	marked := map[string]bool{}
	for _, e := range entries {
		if id, ok := strings.CutSuffix(e.Name(), deletedSuffix); ok && e.Type().IsRegular() {
			if _, err := s.gitDir(id); err == nil {
				marked[id] = true
			}
		}
	}
	if len(marked) == 0 {
		return nil
	}
	var listed []string // every alternate of a living repository
	for _, e := range entries {
		id, ok := strings.CutSuffix(e.Name(), ".git")
		if !ok || !e.IsDir() || marked[id] {
			continue
		}
		b, err := os.ReadFile(filepath.Join(s.Root, e.Name(), "objects", "info", "alternates"))
		if errors.Is(err, fs.ErrNotExist) {
			continue // not a fork: reads no other repository
		}
		if err != nil {
			// What it reads is unknown: nothing is removed.
			return fmt.Errorf("checkpoint: reading what session %s's checkpoints read: %w", id, err)
		}
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			if line := strings.TrimSpace(sc.Text()); line != "" && !strings.HasPrefix(line, "#") {
				listed = append(listed, line)
			}
		}
	}
	var errs []error
	for id := range marked {
		dir, _ := s.gitDir(id)
		needed, err := listedIn(filepath.Join(dir, "objects"), listed)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if needed {
			continue // a living fork reads it: kept, still marked
		}
		// The repository first, its mark last: a kill in between leaves
		// the mark, and the next sweep finishes the removal.
		if err := os.RemoveAll(dir); err != nil {
			errs = append(errs, fmt.Errorf("checkpoint: removing %s: %w", dir, err))
			continue
		}
		teststop.At("release-between-repository-and-mark")
		if err := os.Remove(s.markPath(id)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// listedIn reports whether objects (a repository's objects directory) is
// one of the alternates listed, by path or as the same directory reached
// another way (a symbolic link).
func listedIn(objects string, listed []string) (bool, error) {
	abs, err := filepath.Abs(objects)
	if err != nil {
		return true, err
	}
	info, err := os.Stat(abs)
	if errors.Is(err, fs.ErrNotExist) {
		info = nil // gone already, or half removed by a killed sweep
	} else if err != nil {
		return true, fmt.Errorf("checkpoint: %w", err)
	}
	for _, l := range listed {
		if filepath.Clean(l) == abs {
			return true, nil
		}
		if info != nil {
			if other, err := os.Stat(l); err == nil && os.SameFile(info, other) {
				return true, nil
			}
		}
	}
	return false, nil
}

// revive drops the deleted mark of a session whose repository is written
// again (a new session, or a fork, given a deleted session's ID), so no
// sweep removes it. The caller holds the lock shared.
func (s *Store) revive(sessionID string) error {
	if err := os.Remove(s.markPath(sessionID)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("checkpoint: %w", err)
	}
	return nil
}
