package checkpoint

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/agentloop/agentloop/internal/durable"
)

// Pending is a workspace restore a rewind owes: written (durably) before
// the rewind is recorded and removed once the workspace holds the
// checkpoint. Whoever finds one decides from the session's log: when the
// log holds the rewind (a session.rewound at Seq) the restore is run
// again — Restore is idempotent — else nothing was changed and the note
// is dropped. So a rewind cut short by a crash is finished or undone,
// never left half done.
type Pending struct {
	// Seq is the sequence number the rewind's session.rewound has.
	Seq        int64  `json:"seq"`
	Checkpoint string `json:"checkpoint"`
	Workspace  string `json:"workspace"`
}

const pendingSuffix = ".restore.json"

func (s *Store) pendingPath(sessionID string) (string, error) {
	gd, err := s.gitDir(sessionID)
	if err != nil {
		return "", err
	}
	return strings.TrimSuffix(gd, ".git") + pendingSuffix, nil
}

// BeginRestore durably notes that a restore of session sessionID is
// owed, replacing an earlier note.
func (s *Store) BeginRestore(sessionID string, p Pending) error {
	path, err := s.pendingPath(sessionID)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(s.Root, 0o700); err != nil {
		return fmt.Errorf("checkpoint: cannot create %s: %w", s.Root, err)
	}
	b, _ := json.Marshal(p)
	if err := durable.WriteFile(path, b); err != nil {
		return fmt.Errorf("checkpoint: noting the restore of session %s: %w", sessionID, err)
	}
	return nil
}

// PendingRestore returns the restore session sessionID owes, nil when it
// owes none.
func (s *Store) PendingRestore(sessionID string) (*Pending, error) {
	path, err := s.pendingPath(sessionID)
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("checkpoint: reading %s: %w", path, err)
	}
	var p Pending
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, fmt.Errorf("checkpoint: %s is not a restore note (%v): remove it after checking the session's workspace", path, err)
	}
	return &p, nil
}

// EndRestore removes the note of a restore done (or never to be done).
func (s *Store) EndRestore(sessionID string) error {
	path, err := s.pendingPath(sessionID)
	if err != nil {
		return err
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("checkpoint: %w", err)
	}
	_ = durable.SyncDir(s.Root)
	return nil
}

// PendingRestores lists the sessions that owe a restore.
func (s *Store) PendingRestores() ([]string, error) {
	entries, err := os.ReadDir(s.Root)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	var ids []string
	for _, e := range entries {
		if id, ok := strings.CutSuffix(e.Name(), pendingSuffix); ok && !e.IsDir() {
			ids = append(ids, id)
		}
	}
	return ids, nil
}
