package service

import (
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
	if err := sandbox.RemovePrivateDir(s.cfg.PrivateDirs, id); err != nil {
		return fmt.Errorf("session %s is %s, but its private sandbox directory in %s could not be removed: %w (nothing needs it any more: remove it by hand)", id, done, filepath.Clean(s.cfg.PrivateDirs), err)
	}
	return nil
}
