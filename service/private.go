package service

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/agentloop/agentloop/sandbox"
)

// forgetPrivate removes the private sandbox directory (HOME, TMPDIR,
// caches) of session id, which no process runs any more since it was
// done (terminated, deleted) here; see Config.PrivateDirs.
func (s *Service) forgetPrivate(id, done string) error {
	if s.cfg.PrivateDirs == "" {
		return nil
	}
	err := sandbox.RemovePrivateDir(s.cfg.PrivateDirs, id)
	if errors.Is(err, sandbox.ErrPrivateDirInUse) {
		return fmt.Errorf("session %s is %s, but its private sandbox directory is kept: %v (a process still running the session's commands; remove the directory by hand once that process stops)", id, done, err)
	}
	if err != nil {
		return fmt.Errorf("session %s is %s, but its private sandbox directory in %s could not be removed: %w (nothing needs it any more: remove it by hand)", id, done, filepath.Clean(s.cfg.PrivateDirs), err)
	}
	return nil
}
