package service

import (
	"fmt"

	"github.com/agentloop/agentloop/internal/teststop"
)

// releaseCheckpoints removes deleted session id's workspace checkpoints
// (checkpoint.Store.Release: kept while a living fork reads them, removed
// with the last such fork). It runs only after the session's row is gone,
// so a kill before or during it leaves at worst a repository nobody
// needs, never a missing one a living session reads. A process keeping no
// checkpoints (--checkpoints off) removes nothing.
func (s *Service) releaseCheckpoints(id string) error {
	cs := s.cfg.Checkpoints
	if cs == nil {
		return nil
	}
	teststop.At("delete-before-release") // the row is gone, nothing is marked
	if err := cs.Release(id); err != nil {
		return fmt.Errorf("session %s is deleted, but its workspace checkpoints in %s could not all be removed: %w", id, cs.Root, err)
	}
	return nil
}
