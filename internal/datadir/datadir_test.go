package datadir_test

import (
	"path/filepath"
	"testing"

	"github.com/agentloop/agentloop/internal/datadir"
)

// XDG_DATA_HOME wins; without it the directory is under the home's
// .local/share.
func TestDirFollowsXDG(t *testing.T) {
	t.Setenv("XDG_DATA_HOME", "/data")
	if got := datadir.Dir(); got != filepath.Join("/data", "agentloop") {
		t.Errorf("with XDG_DATA_HOME: %s", got)
	}
	t.Setenv("XDG_DATA_HOME", "")
	t.Setenv("HOME", "/home/ada")
	if got := datadir.Dir(); got != filepath.Join("/home/ada", ".local", "share", "agentloop") {
		t.Errorf("without it: %s", got)
	}
}
