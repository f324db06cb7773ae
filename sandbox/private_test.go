package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// removeTreeEnv names the directory a re-run of this test binary removes
// with RemoveTree (TestRemoveTreeChild).
const removeTreeEnv = "AGENTLOOP_REMOVE_TREE"

// A Go module cache in a session's private directory is read-only on
// purpose; removing the directory must still take it, as the user who
// owns it (not root, who may write anywhere).
func TestRemoveTreeTakesReadOnlyDirectories(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "session")
	ro := filepath.Join(dir, "go", "pkg", "mod", "example.com", "m@v1.0.0")
	if err := os.MkdirAll(ro, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ro, "go.mod"), []byte("module m\n"), 0o444); err != nil {
		t.Fatal(err)
	}
	// Beside it, a symlink a command planted to a read-only directory
	// outside: removal takes the link and leaves what it points to.
	outside := filepath.Join(base, "outside")
	if err := os.Mkdir(outside, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, "keep"), nil, 0o444); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "go", "link")); err != nil {
		t.Fatal(err)
	}
	for d := ro; d != dir; d = filepath.Dir(d) {
		if err := os.Chmod(d, 0o555); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(outside, 0o555); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { RemoveTree(dir) }) // as this process: whatever is left

	if os.Geteuid() != 0 {
		if err := RemoveTree(dir); err != nil {
			t.Fatal(err)
		}
	} else {
		// As root permissions do not bind: remove it as the owner would,
		// in a re-run of this binary as the sandbox user (a copy it can
		// reach: go test's own directory is root's alone).
		for _, d := range []string{filepath.Dir(base), base} {
			if err := os.Chmod(d, 0o711); err != nil {
				t.Fatal(err)
			}
		}
		bin, err := os.ReadFile(os.Args[0])
		if err != nil {
			t.Fatal(err)
		}
		self := filepath.Join(base, "sandbox.test")
		if err := os.WriteFile(self, bin, 0o755); err != nil {
			t.Fatal(err)
		}
		// The user's own: the session's directory and its base, as when
		// agentloop runs as that user.
		filepath.Walk(dir, func(p string, _ os.FileInfo, _ error) error { return os.Lchown(p, Nobody, Nobody) })
		if err := os.Lchown(base, Nobody, Nobody); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(self, "-test.run=^TestRemoveTreeChild$")
		cmd.Env = append(os.Environ(), removeTreeEnv+"="+dir)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: Nobody, Gid: Nobody}}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("removing as the sandbox user: %v\n%s", err, out)
		}
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("%s is still there: %v", dir, err)
	}
	if fi, err := os.Stat(outside); err != nil || fi.Mode().Perm() != 0o555 {
		t.Fatalf("the directory a link pointed to was changed: %v %v", fi.Mode(), err)
	}
	if _, err := os.Stat(filepath.Join(outside, "keep")); err != nil {
		t.Fatalf("the directory a link pointed to lost its file: %v", err)
	}
	os.Chmod(outside, 0o755)
}

// A private directory whose subdirectory a command replaced by a symlink
// is refused, not followed or handed over.
func TestPrivateDirRefusesAPlantedSymlink(t *testing.T) {
	base := filepath.Join(t.TempDir(), "base")
	dir, err := PrivateDir(base, "s1", os.Getuid(), os.Getgid())
	if err != nil {
		t.Fatal(err)
	}
	target := t.TempDir()
	home := filepath.Join(dir, "home")
	if err := os.Remove(home); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, home); err != nil {
		t.Fatal(err)
	}
	if _, err := PrivateDir(base, "s1", Nobody, Nobody); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Fatalf("PrivateDir over a planted symlink: %v", err)
	}
	if fi, err := os.Stat(target); err != nil || (os.Geteuid() == 0 && fi.Sys().(*syscall.Stat_t).Uid == Nobody) {
		t.Fatalf("the symlink's target was handed to the sandbox user (%v)", err)
	}
}

// TestRemoveTreeChild removes the directory $AGENTLOOP_REMOVE_TREE names;
// it does nothing in a run of its own.
func TestRemoveTreeChild(t *testing.T) {
	dir := os.Getenv(removeTreeEnv)
	if dir == "" {
		t.Skip("run by TestRemoveTreeTakesReadOnlyDirectories")
	}
	if err := RemoveTree(dir); err != nil {
		t.Fatal(err)
	}
}
