package fs_test

import (
	"encoding/json"
	"errors"
	iofs "io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentloop/agentloop/tool"
)

// A refusal — a path outside the workspace, or a file the OS will not let
// the process read — is an error matching fs.ErrPermission, which the
// runner turns into a stop for a person.
func TestRefusalsMatchErrPermission(t *testing.T) {
	e := newEnv(t)
	readFile, _ := e.reg.Lookup("read_file")
	_, err := tool.Execute(t.Context(), readFile, json.RawMessage(`{"path":"/etc/hostname"}`))
	if !errors.Is(err, iofs.ErrPermission) {
		t.Fatalf("outside the workspace: %v", err)
	}
	// An ordinary failure is not a refusal.
	_, err = tool.Execute(t.Context(), readFile, json.RawMessage(`{"path":"missing.txt"}`))
	if err == nil || errors.Is(err, iofs.ErrPermission) {
		t.Fatalf("missing file: %v", err)
	}
	if os.Geteuid() == 0 {
		t.Log("running as root, which ignores file modes: the OS refusal is not checked")
		return
	}
	e.write("secret.txt", "x")
	if err := os.Chmod(filepath.Join(e.root, "secret.txt"), 0); err != nil {
		t.Fatal(err)
	}
	_, err = tool.Execute(t.Context(), readFile, json.RawMessage(`{"path":"secret.txt"}`))
	if !errors.Is(err, iofs.ErrPermission) {
		t.Fatalf("unreadable file: %v", err)
	}
}
