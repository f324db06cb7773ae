package main

import (
	"os"
	"path/filepath"

	"github.com/agentloop/agentloop/assemble"
	"github.com/agentloop/agentloop/checkpoint"
	"github.com/agentloop/agentloop/config"
	"github.com/agentloop/agentloop/loop"
)

// checkpointsFor is where sessions of database db keep their workspace
// snapshots: beside a SQLite database (DIR/checkpoints), or under the
// user's data directory for PostgreSQL. $AGENTLOOP_CHECKPOINTS wins.
// Either way they are local to this machine.
func checkpointsFor(db string) *checkpoint.Store {
	if dir := os.Getenv("AGENTLOOP_CHECKPOINTS"); dir != "" {
		return &checkpoint.Store{Root: dir}
	}
	if !assemble.IsPostgres(db) {
		return &checkpoint.Store{Root: filepath.Join(filepath.Dir(db), "checkpoints")}
	}
	return &checkpoint.Store{Root: filepath.Join(filepath.Dir(defaultDataDB()), "checkpoints")}
}

// defaultDataDB is the SQLite database's default place, whatever --db says.
func defaultDataDB() string {
	base := os.Getenv("XDG_DATA_HOME")
	if base == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "agentloop.db"
		}
		base = filepath.Join(home, ".local", "share")
	}
	return filepath.Join(base, "agentloop", "sessions.db")
}

// checkpointHook snapshots sessions' workspaces into cs, except for
// sessions whose profile says checkpoints: false.
func checkpointHook(cs *checkpoint.Store, cfg *config.Config) loop.Checkpointer {
	return cs.Hook(func(st *loop.State) bool {
		if cfg == nil || st.Profile == "" {
			return false
		}
		p, ok := cfg.Profiles[st.Profile]
		return ok && p.NoCheckpoints
	})
}
