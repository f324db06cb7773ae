package service

import (
	"fmt"

	"github.com/agentloop/agentloop/sandbox"
)

// forgetPrivate removes the private sandbox directory (HOME, TMPDIR,
// caches) of session id, which no process runs any more (Config.PrivateDirs).
func (s *Service) forgetPrivate(id string) error {
	if s.cfg.PrivateDirs == "" {
		return nil
	}
	if err := sandbox.RemovePrivateDir(s.cfg.PrivateDirs, id); err != nil {
		return fmt.Errorf("its private sandbox directory could not be removed: %w (nothing needs it any more: remove it by hand)", err)
	}
	return nil
}
