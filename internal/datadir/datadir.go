// Package datadir says where agentloop keeps its data by default.
package datadir

import (
	"os"
	"path/filepath"
)

// Dir is agentloop's data directory, where the default session database
// and stored MCP logins live: $XDG_DATA_HOME/agentloop, else
// ~/.local/share/agentloop, else "" (the working directory) when the
// home directory is unknown.
func Dir() string {
	base := os.Getenv("XDG_DATA_HOME")
	if base == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return ""
		}
		base = filepath.Join(home, ".local", "share")
	}
	return filepath.Join(base, "agentloop")
}
