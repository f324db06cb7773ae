package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/agentloop/agentloop/assemble"
	"github.com/agentloop/agentloop/checkpoint"
	"github.com/agentloop/agentloop/config"
	"github.com/agentloop/agentloop/internal/datadir"
	"github.com/agentloop/agentloop/loop"
)

// checkpointsFor is where sessions of database db keep their workspace
// snapshots: beside a SQLite database (DIR/checkpoints), or under the
// user's data directory for PostgreSQL. $AGENTLOOP_CHECKPOINTS wins.
// Either way they are local to this machine.
func checkpointsFor(db string) *checkpoint.Store {
	root := os.Getenv("AGENTLOOP_CHECKPOINTS")
	switch {
	case root != "":
	case !assemble.IsPostgres(db):
		root = filepath.Join(filepath.Dir(db), "checkpoints")
	default:
		root = filepath.Join(datadir.Dir(), "checkpoints")
	}
	// Absolute: git runs in other directories (--db s.db is relative).
	if abs, err := filepath.Abs(root); err == nil {
		root = abs
	}
	return &checkpoint.Store{Root: root}
}

// defaultDataDB is the SQLite database's default place, whatever --db says.
func defaultDataDB() string {
	return filepath.Join(datadir.Dir(), "sessions.db")
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

// checkpointsFlag registers --checkpoints on a long-running command (serve,
// worker).
func checkpointsFlag(fs *flag.FlagSet) *string {
	return fs.String("checkpoints", "", "directory of the sessions' workspace checkpoints (shadow git repositories; needs git), or off. "+
		"Default: beside a SQLite database (DIR/checkpoints), under ~/.local/share/agentloop for PostgreSQL; $AGENTLOOP_CHECKPOINTS. "+
		"They are kept on the machine that ran the step: with several servers or Temporal workers, give a directory every one of them reaches, "+
		"or forks and rewinds work only where the steps ran")
}

// openCheckpoints is the checkpoint store --checkpoints names for sessions
// of database db: nil for "off". The default is turned off, with a note,
// when git is missing; a directory named on purpose then fails.
func openCheckpoints(value, db string, info io.Writer) (*checkpoint.Store, error) {
	if value == "off" {
		return nil, nil
	}
	if _, err := exec.LookPath("git"); err != nil {
		if value != "" {
			return nil, fmt.Errorf("--checkpoints %s: workspace checkpoints need git, which is not on PATH (install git, or pass --checkpoints off)", value)
		}
		fmt.Fprintln(info, "agentloop: git is not on PATH, so no workspace checkpoints are kept (sessions cannot be forked or rewound); install git to keep them")
		return nil, nil
	}
	if value == "" {
		return checkpointsFor(db), nil
	}
	abs, err := filepath.Abs(value)
	if err != nil {
		return nil, fmt.Errorf("--checkpoints %s: %v", value, err)
	}
	if err := os.MkdirAll(abs, 0o700); err != nil {
		return nil, fmt.Errorf("--checkpoints %s: %v (name a directory this process can write, or pass --checkpoints off)", value, err)
	}
	return &checkpoint.Store{Root: abs}, nil
}
