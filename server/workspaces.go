package server

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/service"
)

// Workspaces belong to a tenant. Under the server's workspaces directory
// the local caller (a server without keys) has its workspaces at the top
// and each key tenant T has its own directory, tenants/T. A request names
// a workspace inside its own tenant's directory: a relative name is taken
// there, an absolute path must already be there, and ".", "..", another
// tenant's directory and a symlink leading out of it cannot be reached.
// Errors name the workspace as asked, never the server's paths.

// tenantsDir holds the key tenants' directories.
const tenantsDir = "tenants"

var plainTenant = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9._-]{0,63}$`)

// tenantRoot is the directory a tenant's workspaces live in.
func tenantRoot(root, tenant string) string {
	if tenant == "" {
		return root
	}
	name := tenant
	if !plainTenant.MatchString(tenant) || strings.Contains(tenant, "..") {
		h := sha256.Sum256([]byte(tenant))
		name = "t-" + hex.EncodeToString(h[:8])
	}
	return filepath.Join(root, tenantsDir, name)
}

// workspace resolves the session's workspace inside its tenant's
// directory, creating it; none gets a new directory named after the
// session.
func (s *Server) workspace(c service.Caller, t *loop.Task) error {
	root := s.cfg.Defaults.Workspaces
	if root == "" {
		return invalid("this server has no workspaces directory (start it with --workspaces DIR)")
	}
	own := tenantRoot(root, c.Tenant)
	if err := os.MkdirAll(own, 0o700); err != nil {
		s.log.Error("tenant workspaces directory", "err", err)
		return invalid("the server cannot make workspaces now (its log says why)")
	}
	asked := t.Workspace
	name := asked
	switch {
	case name == "":
		name = t.ID
	case filepath.IsAbs(name):
		rel, err := filepath.Rel(own, filepath.Clean(name))
		if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, "../") {
			return &service.Error{Kind: service.ErrForbidden, Msg: "workspace " + quote(asked) + " is not one of your workspaces: name it relative to your workspaces directory, e.g. \"my-project\""}
		}
		name = rel
	}
	name = filepath.Clean(name)
	if name == "." || name == ".." || strings.HasPrefix(name, "../") || filepath.IsAbs(name) {
		return &service.Error{Kind: service.ErrForbidden, Msg: "workspace " + quote(asked) + ": give a directory name inside your workspaces, such as \"my-project\" (not \".\" or \"..\")"}
	}
	if c.Tenant == "" && (name == tenantsDir || strings.HasPrefix(name, tenantsDir+"/")) {
		return &service.Error{Kind: service.ErrForbidden, Msg: "workspace " + quote(asked) + ": \"" + tenantsDir + "\" holds the key tenants' workspaces; pick another name"}
	}
	// os.Root refuses any path, symlinks included, that leads out of the
	// tenant's directory, so nothing is made outside it either.
	r, err := os.OpenRoot(own)
	if err != nil {
		s.log.Error("tenant workspaces directory", "err", err)
		return invalid("the server cannot make workspaces now (its log says why)")
	}
	defer r.Close()
	if err := r.MkdirAll(name, 0o700); err != nil {
		if errors.Is(err, os.ErrExist) || errors.Is(err, os.ErrPermission) || strings.Contains(err.Error(), "escapes") {
			return &service.Error{Kind: service.ErrForbidden, Msg: "workspace " + quote(asked) + " leads outside your workspaces (a symlink or a file is in the way)"}
		}
		return invalid("workspace %s cannot be made: %v", quote(asked), errors.Unwrap(err))
	}
	dir := filepath.Join(own, name)
	if err := s.giveToCommands(root, own, dir); err != nil {
		s.log.Error("giving a workspace to the sandbox user", "err", err)
		return invalid("the server cannot make workspaces now (its log says why)")
	}
	// What the tools will open is where the path leads now: still inside.
	real, err1 := filepath.EvalSymlinks(dir)
	realOwn, err2 := filepath.EvalSymlinks(own)
	if rel, err := filepath.Rel(realOwn, real); err1 != nil || err2 != nil || err != nil || rel == "." || strings.HasPrefix(rel, "..") {
		return &service.Error{Kind: service.ErrForbidden, Msg: "workspace " + quote(asked) + " leads outside your workspaces"}
	}
	t.Workspace = dir
	return nil
}

// giveToCommands makes a new workspace writable by the user sandboxed
// commands run as, when the server runs as root (they never do): the
// workspace becomes theirs, and the directories above it can be passed
// through (not listed) by them.
func (s *Server) giveToCommands(root, own, dir string) error {
	uid, gid := s.cfg.Defaults.CommandUID, s.cfg.Defaults.CommandGID
	if uid <= 0 {
		return nil
	}
	for _, d := range []string{root, filepath.Join(root, tenantsDir), own} {
		if info, err := os.Stat(d); err == nil && info.Mode().Perm()&0o001 == 0 {
			if err := os.Chmod(d, info.Mode().Perm()|0o011); err != nil {
				return err
			}
		}
	}
	for d := dir; d != own && strings.HasPrefix(d, own+"/"); d = filepath.Dir(d) {
		if err := os.Lchown(d, uid, gid); err != nil {
			return err
		}
	}
	return nil
}

func quote(s string) string { return `"` + s + `"` }

// deleteSession1 deletes a session and, when the server made its
// workspace for it alone (a session started without naming one), that
// workspace too. A named workspace may serve other sessions of the
// tenant: it stays until the tenant's own files are cleaned up by whoever
// named it.
func (s *Server) deleteSession1(r *http.Request, c service.Caller, id, workspace string) error {
	if err := s.svc.Delete(r.Context(), c, id); err != nil {
		return err
	}
	root := s.cfg.Defaults.Workspaces
	if root == "" || workspace == "" {
		return nil
	}
	// The server's own: named after the session, in a tenant's directory.
	dir := filepath.Dir(workspace)
	if filepath.Base(workspace) != id || (dir != root && filepath.Dir(dir) != filepath.Join(root, tenantsDir)) {
		return nil
	}
	if err := os.RemoveAll(workspace); err != nil {
		s.log.Warn("removing a deleted session's workspace", "id", id, "err", err)
	}
	return nil
}
