package service

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/agentloop/agentloop/internal/durable"
	"github.com/agentloop/agentloop/store"
)

// A fork writes files before it is recorded: the new session's shadow
// repository and its workspace. So that a process killed in between
// leaves nothing behind that a restarted server could mistake for a
// session's, the fork first writes a note (CHECKPOINTS/ID.fork.json,
// durably), and removes it once the new session is in the store or its
// files are gone. Whoever finds a note its writer left (finishForks, run
// as a server starts and then with every recovery pass) asks the store:
// when the session is there the fork was recorded and only the note goes;
// when it is not, the fork's workspace, its half-exported copies and its
// shadow repository are removed, then the note.

// forkNote is what a fork in progress has written, or may have.
type forkNote struct {
	ID        string    `json:"id"`
	From      string    `json:"from"`
	Workspace string    `json:"workspace"`
	Owner     string    `json:"owner"`
	Time      time.Time `json:"time"`
}

const forkNoteSuffix = ".fork.json"

// abandonedAfter is how old a note written on another machine must be
// before it is taken as left by a process that died (a fork takes
// seconds; only its workspace's export grows with its size).
const abandonedAfter = time.Hour

func (s *Service) forkNotePath(id string) string {
	return filepath.Join(s.cfg.Checkpoints.Root, id+forkNoteSuffix)
}

// beginFork durably notes the fork n before any of its files is written.
func (s *Service) beginFork(n forkNote) error {
	root := s.cfg.Checkpoints.Root
	if err := os.MkdirAll(root, 0o700); err != nil {
		return fmt.Errorf("fork: cannot create the checkpoints directory %s: %w", root, err)
	}
	b, _ := json.Marshal(n)
	if err := durable.WriteFile(s.forkNotePath(n.ID), b); err != nil {
		return fmt.Errorf("fork: noting the fork in %s: %w", root, err)
	}
	return nil
}

// endFork removes the note of fork id: it was recorded, or its files are
// gone.
func (s *Service) endFork(id string) {
	if err := os.Remove(s.forkNotePath(id)); err == nil {
		_ = durable.SyncDir(s.cfg.Checkpoints.Root)
	}
}

// removeForkFiles removes what fork n may have written: its workspace,
// the half-exported copies beside it, and its shadow repository.
func (s *Service) removeForkFiles(n forkNote) error {
	var errs []error
	if n.Workspace != "" && filepath.IsAbs(n.Workspace) {
		errs = append(errs, os.RemoveAll(n.Workspace))
		// checkpoint.Export writes into .NAME.export-* beside the
		// workspace and renames it: a kill leaves that one.
		partial, _ := filepath.Glob(filepath.Join(filepath.Dir(n.Workspace), "."+filepath.Base(n.Workspace)+".export-*"))
		for _, p := range partial {
			errs = append(errs, os.RemoveAll(p))
		}
	}
	errs = append(errs, s.cfg.Checkpoints.Remove(n.ID))
	return errors.Join(errs...)
}

// finishForks settles every fork whose process is gone: a recorded one
// keeps its files, one that was never recorded loses them. Forks this
// process is making, or a live process on this machine, are left alone.
func (s *Service) finishForks(ctx context.Context) error {
	if s.cfg.Checkpoints == nil {
		return nil
	}
	entries, err := os.ReadDir(s.cfg.Checkpoints.Root)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("fork: reading %s: %w", s.cfg.Checkpoints.Root, err)
	}
	var errs []error
	for _, e := range entries {
		id, ok := strings.CutSuffix(e.Name(), forkNoteSuffix)
		if !ok || e.IsDir() {
			continue
		}
		b, err := os.ReadFile(s.forkNotePath(id))
		if err != nil {
			continue // settled by someone else meanwhile
		}
		var n forkNote
		if err := json.Unmarshal(b, &n); err != nil || n.ID != id {
			errs = append(errs, fmt.Errorf("fork: %s is not a fork note (%v): remove it after checking session %s's workspace", s.forkNotePath(id), err, id))
			continue
		}
		if !s.forkerGone(n) {
			continue
		}
		_, err = s.st.Load(ctx, id)
		switch {
		case err == nil: // recorded: the files are the session's
		case errors.Is(err, store.ErrNotFound):
			if err := s.removeForkFiles(n); err != nil {
				errs = append(errs, fmt.Errorf("fork %s of session %s was cut short and its files could not all be removed: %w", id, n.From, err))
				continue
			}
		default:
			errs = append(errs, err)
			continue
		}
		s.endFork(id)
	}
	return errors.Join(errs...)
}

// forkerGone reports whether the process that wrote note n is gone: not
// this one; on this machine, a process no longer running, or an earlier
// process that had this one's process id (a restarted container); else a
// note older than abandonedAfter.
func (s *Service) forkerGone(n forkNote) bool {
	if n.Owner == s.cfg.Owner {
		return false
	}
	parts := strings.Split(n.Owner, ":")
	host, _ := os.Hostname()
	if len(parts) == 3 && parts[0] == host {
		if pid, err := strconv.Atoi(parts[1]); err == nil && pid == os.Getpid() {
			return true
		}
		if processGone(n.Owner) {
			return true
		}
	}
	// Another machine's, or a process id another process took since.
	return s.cfg.Clock().Sub(n.Time) > abandonedAfter
}
