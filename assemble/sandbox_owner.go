package assemble

import (
	"fmt"
	"os"
	"syscall"

	"github.com/agentloop/agentloop/sandbox"
)

// commandUser picks who a session's commands run as when this process is
// root: never root. A workspace that belongs to a user is that user's
// project, so its commands run as that user; a workspace root owns must
// be writable by the sandbox user (the server makes its workspaces so),
// or the session would fail on every write — it is refused at start with
// what to do instead.
func commandUser(p *sandbox.Policy, workspace string) error {
	if os.Geteuid() != 0 {
		return nil
	}
	info, err := os.Stat(workspace)
	if err != nil {
		return err
	}
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	if st.Uid != 0 {
		p.UID, p.GID = int(st.Uid), int(st.Gid)
		return nil
	}
	mode := info.Mode().Perm()
	if mode&0o002 != 0 || (int(st.Gid) == p.GID && mode&0o020 != 0) {
		return nil
	}
	return fmt.Errorf("agentloop runs as root, and sandboxed commands never do: they run as uid %d, which cannot write the workspace %s (owned by root). "+
		"Run agentloop as the workspace's owner, give it to the sandbox user (chown -R %d:%d %s), or pass --sandbox none to run commands unconfined as root",
		p.UID, workspace, p.UID, p.GID, workspace)
}
