package server

import (
	"io/fs"
	"net/http"
	"os"
	"path/filepath"

	"github.com/agentloop/agentloop/api"
	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/service"
)

// fork starts a new session from a session's log up to the end of a step,
// in a new workspace holding that step's files (service.Fork), and
// answers as a start does: 201 with the new session's ID.
func (s *Server) fork(w http.ResponseWriter, r *http.Request) {
	id, ok := s.sessionID(w, r)
	if !ok {
		return
	}
	var req api.ForkRequest
	if err := s.decode(w, r, &req, false); err != nil {
		s.fail(w, r, err)
		return
	}
	if req.At < 1 {
		s.fail(w, r, invalid("\"at\" is the step whose end the fork starts from, from 1"))
		return
	}
	c := callerOf(r.Context())
	fr := service.ForkRequest{At: req.At, Message: req.Message, ID: loop.RandomID(), Prepare: s.giveTreeToCommands}
	if req.Model != "" {
		spec, err := s.startDefaults().RequestedModel("", req.Model)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		fr.Model = spec
	}
	orig, err := s.svc.Get(r.Context(), c, id)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if s.serverMade(id, orig.Workspace) {
		// Made by the server for the fork alone, as for a new session: it
		// goes when the fork is deleted.
		fr.Workspace = filepath.Join(filepath.Dir(orig.Workspace), fr.ID)
	}
	unlock, ok := s.roomToStart(w, r, c)
	if !ok {
		return
	}
	defer unlock()
	started, err := s.svc.Fork(r.Context(), c, id, fr)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeStarted(w, started.ID)
}

// serverMade reports whether workspace is one the server made for
// session id alone: named after it, in a tenant's workspaces directory.
func (s *Server) serverMade(id, workspace string) bool {
	root := s.cfg.Defaults.Workspaces
	if root == "" || workspace == "" || filepath.Base(workspace) != id {
		return false
	}
	dir := filepath.Dir(workspace)
	return dir == root || filepath.Dir(dir) == filepath.Join(root, tenantsDir)
}

// giveTreeToCommands gives a fork's workspace, every file in it included,
// to the user sandboxed commands run as, when the server runs as root
// (the exported files are root's); the directories above it are the
// original's, already passable.
func (s *Server) giveTreeToCommands(dir string) error {
	uid, gid := s.cfg.Defaults.CommandUID, s.cfg.Defaults.CommandGID
	if uid <= 0 {
		return nil
	}
	return filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, gid)
	})
}
