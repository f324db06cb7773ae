package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentloop/agentloop/sandbox"
)

// rootSandboxCLI is a CLI for a test of what agentloop does as root with
// a sandbox; it skips the test (saying why it needs root) unless it runs
// as root on a machine where a sandbox backend works.
func rootSandboxCLI(t *testing.T, why string) *cli {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: " + why)
	}
	c := newCLI(t)
	if _, _, code := c.run("", "doctor"); code != 0 && os.Getenv("AGENTLOOP_SANDBOX_TESTS") != "1" {
		t.Skip("no sandbox backend works here (agentloop doctor)")
	}
	// Sessions' private directories go under a TMPDIR of the test's own,
	// not the machine's: whatever a test leaves goes with it. Passable by
	// the sandbox user, as /tmp is.
	tmp := t.TempDir()
	os.Chmod(filepath.Dir(tmp), 0o711)
	os.Chmod(tmp, 0o711)
	c.env = append(c.env, "TMPDIR="+tmp)
	return c
}

// privateBase is where agentloop run by c makes sessions' private
// directories (sandbox.DefaultPrivateBase under its TMPDIR).
func privateBase(c *cli) string {
	for _, kv := range c.env {
		if tmp, ok := strings.CutPrefix(kv, "TMPDIR="); ok {
			return filepath.Join(tmp, filepath.Base(sandbox.DefaultPrivateBase()))
		}
	}
	return sandbox.DefaultPrivateBase()
}

// sandboxWorkspaces is a --workspaces directory whose parents are as a
// server's data directory's would be: passable, not listable.
func sandboxWorkspaces(t *testing.T) string {
	base := t.TempDir()
	os.Chmod(filepath.Dir(base), 0o711)
	os.Chmod(base, 0o711)
	return filepath.Join(base, "ws")
}

// A server run as root with the default sandbox: a session's command
// runs as the unprivileged sandbox user and still writes its workspace,
// which the server gave to that user.
func TestServedSessionsWriteTheirWorkspaceAsRoot(t *testing.T) {
	c := rootSandboxCLI(t, "it checks what a server running as root gives its commands")
	root := sandboxWorkspaces(t)
	script := writeScript(t, `{"steps":[{"tool_calls":[{"name":"execute_command","arguments":{"command":"id -u > who.txt; echo \"$HOME\" > home.txt; echo made > made.txt; cat made.txt"}}]},{"text":"done"}]}`)
	s := c.serve("--sandbox", "landlock", "--yes", "--model", "script:"+script, "--workspaces", root)
	if _, ready, _ := s.send(t, request{"GET", "/readyz", "", nil}); !strings.Contains(ready, `"backend":"landlock"`) || !strings.Contains(ready, `"network":"none"`) {
		t.Errorf("/readyz does not say where commands run: %s", ready)
	}
	code, body, _ := s.send(t, request{"POST", "/v1/sessions", `{"task":"write"}`, map[string]string{"Content-Type": "application/json"}})
	if code != 201 {
		t.Fatalf("create: %d %s", code, body)
	}
	var created struct{ ID string }
	json.Unmarshal([]byte(body), &created)
	if st := s.waitFor(t, created.ID, "completed", "failed", "waiting", "paused", "error"); st != "completed" {
		_, got, _ := s.send(t, request{"GET", "/v1/sessions/" + created.ID, "", nil})
		t.Fatalf("the session is %s: %.2000s", st, got)
	}
	who, err := os.ReadFile(filepath.Join(root, created.ID, "who.txt"))
	if err != nil || strings.TrimSpace(string(who)) == "0" || strings.TrimSpace(string(who)) == "" {
		t.Fatalf("the command ran as %q (%v)", who, err)
	}
	// The command's HOME was in the session's private directory (HOME,
	// TMPDIR, caches), which went when the session ended; deleting the
	// session takes its workspace.
	private := filepath.Join(privateBase(c), created.ID)
	if home, _ := os.ReadFile(filepath.Join(root, created.ID, "home.txt")); !strings.HasPrefix(strings.TrimSpace(string(home)), private+"/") {
		t.Fatalf("the command's HOME was %q, not in the session's private directory %s", home, private)
	}
	// The server lets the session go just after its end is visible.
	for deadline := time.Now().Add(30 * time.Second); !isGone(private); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the private directory %s outlived its ended session", private)
		}
	}
	if code, body, _ := s.send(t, request{"DELETE", "/v1/sessions/" + created.ID, "", nil}); code != 204 {
		t.Fatalf("delete: %d %s", code, body)
	}
	if dir := filepath.Join(root, created.ID); !isGone(dir) {
		t.Errorf("%s outlived its deleted session", dir)
	}

	// A workspaces directory the sandbox user cannot reach is refused at
	// start, with what to do.
	closed := filepath.Join(t.TempDir(), "ws")
	os.Chmod(filepath.Dir(closed), 0o700)
	_, stderr, code2 := c.run("", "serve", "--db", c.db, "--addr", "127.0.0.1:0", "--sandbox", "landlock", "--workspaces", closed)
	if code2 == 0 || !strings.Contains(stderr, "chmod o+x") {
		t.Fatalf("serve with unreachable workspaces: %d %s", code2, stderr)
	}
}

// agentloop run as root: in a user's project the commands run as that
// user; in a workspace root owns they could write nothing, so the run is
// refused at start with what to do.
func TestRunAsRootRunsCommandsAsTheWorkspaceOwner(t *testing.T) {
	c := rootSandboxCLI(t, "it checks what agentloop running as root gives its commands")
	script := writeScript(t, `{"steps":[{"tool_calls":[{"name":"execute_command","arguments":{"command":"id -u > who.txt; echo \"$HOME\" > home.txt"}}]},{"text":"done"}]}`)
	base := t.TempDir()
	os.Chmod(base, 0o711)
	project := filepath.Join(base, "project")
	os.Mkdir(project, 0o755)
	os.Chown(project, 4242, 4242)
	if _, stderr, code := c.run("", "run", "--sandbox", "landlock", "--yes", "--model", "script:"+script, "--dir", project, "go"); code != 0 {
		t.Fatalf("run in a user's project: %d %s", code, stderr)
	}
	if who, _ := os.ReadFile(filepath.Join(project, "who.txt")); strings.TrimSpace(string(who)) != "4242" {
		t.Fatalf("the command ran as %q, not the project's owner", who)
	}
	// The session ended: its private directory (the command's HOME) went
	// with it, and no other was left.
	home, _ := os.ReadFile(filepath.Join(project, "home.txt"))
	if !strings.HasPrefix(strings.TrimSpace(string(home)), privateBase(c)+"/") || !isGone(strings.TrimSpace(string(home))) {
		t.Errorf("the command's HOME %q is not a private directory under %s that went with the session", home, privateBase(c))
	}
	if left, _ := os.ReadDir(privateBase(c)); len(left) != 0 {
		t.Errorf("%d private directories left behind in %s", len(left), privateBase(c))
	}
	rootOwned := filepath.Join(base, "root-owned")
	os.Mkdir(rootOwned, 0o755)
	_, stderr, code := c.run("", "run", "--sandbox", "landlock", "--yes", "--model", "script:"+script, "--dir", rootOwned, "go")
	if code == 0 || !strings.Contains(stderr, "chown -R") || !strings.Contains(stderr, "--sandbox none") {
		t.Fatalf("run in a root-owned workspace: %d %s", code, stderr)
	}
}

// With Landlock before ABI 9 a command could connect to PostgreSQL's
// UNIX socket: serve refuses such a URL under landlock and says what to do.
func TestServeRefusesASocketDatabaseLandlockCannotHide(t *testing.T) {
	if abi := sandbox.LandlockABI(); abi >= 9 || abi == 0 {
		t.Skipf("Landlock ABI %d: nothing to refuse here", abi)
	}
	c := newCLI(t)
	c.env = append(c.env, "AGENTLOOP_UNSAFE_NO_SANDBOX=") // TestMain's, for tests about other things
	_, stderr, code := c.run("", "serve", "--addr", "127.0.0.1:0", "--sandbox", "landlock", "--db", "postgres://agentloop@/agentloop?host=/var/run/postgresql")
	if code != exitUsage || !strings.Contains(stderr, "--sandbox bwrap") || !strings.Contains(stderr, "TCP") {
		t.Fatalf("%d %s", code, stderr)
	}
}

// The README's first command, as root on a fresh machine: root's home is
// closed to the sandbox user, so the workspaces go to /var/lib, and the
// demo session runs its commands there to the end.
func TestDemoAsRootOnAFreshMachine(t *testing.T) {
	c := rootSandboxCLI(t, "it checks what agentloop running as root gives its commands")
	home := t.TempDir()
	os.Chmod(home, 0o700) // as /root is
	c.env = append(c.env, "HOME="+home, "XDG_DATA_HOME="+home, "AGENTLOOP_SANDBOX=landlock", "AGENTLOOP_UNSAFE_NO_SANDBOX=")
	b := c.start("serve", "--addr", "127.0.0.1:0", "--demo")
	var s *serving
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline) && s == nil; time.Sleep(50 * time.Millisecond) {
		if m := listening.FindStringSubmatch(b.errText()); m != nil {
			s = &serving{background: b, url: m[1]}
		}
	}
	if s == nil || !strings.Contains(b.errText(), "workspaces are in /var/lib/agentloop/workspaces") {
		t.Fatalf("serve --demo as root:\n%s", b.errText())
	}
	var id string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline) && id == ""; time.Sleep(100 * time.Millisecond) {
		_, body, _ := s.send(t, request{"GET", "/v1/sessions", "", nil})
		var page struct {
			Sessions []struct{ ID, Workspace string }
		}
		json.Unmarshal([]byte(body), &page)
		if len(page.Sessions) > 0 {
			id = page.Sessions[0].ID
			t.Cleanup(func() { os.RemoveAll(page.Sessions[0].Workspace) })
		}
	}
	if st := s.waitFor(t, id, "completed", "failed", "error", "waiting", "paused"); st != "completed" {
		_, got, _ := s.send(t, request{"GET", "/v1/sessions/" + id, "", nil})
		t.Fatalf("the demo session is %s: %.1500s", st, got)
	}
}

// isGone says whether nothing is at path.
func isGone(path string) bool {
	_, err := os.Stat(path)
	return os.IsNotExist(err)
}

// A served session that stopped paused keeps its private directory; once
// it is terminated, nothing of it runs and the directory goes.
func TestTerminatingAPausedServedSessionTakesItsPrivateDirectory(t *testing.T) {
	c := rootSandboxCLI(t, "it checks the private directories a server running as root gives its commands")
	root := sandboxWorkspaces(t)
	script := writeScript(t, `{"steps":[{"tool_calls":[{"name":"execute_command","arguments":{"command":"echo \"$HOME\" > home.txt; : > started; while [ ! -e release ]; do sleep 0.05; done"}}]},{"text":"done"}]}`)
	s := c.serve("--sandbox", "landlock", "--yes", "--model", "script:"+script, "--workspaces", root)
	json1 := map[string]string{"Content-Type": "application/json"}
	code, body, _ := s.send(t, request{"POST", "/v1/sessions", `{"task":"wait"}`, json1})
	if code != 201 {
		t.Fatalf("create: %d %s", code, body)
	}
	var created struct{ ID string }
	json.Unmarshal([]byte(body), &created)
	ws := filepath.Join(root, created.ID)
	for deadline := time.Now().Add(time.Minute); isGone(filepath.Join(ws, "started")); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the command never started")
		}
	}
	if code, body, _ := s.send(t, request{"POST", "/v1/sessions/" + created.ID + "/pause", `{"note":"later"}`, json1}); code != 202 && code != 200 {
		t.Fatalf("pause: %d %s", code, body)
	}
	if err := os.WriteFile(filepath.Join(ws, "release"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if st := s.waitFor(t, created.ID, "paused", "completed", "failed", "error"); st != "paused" {
		t.Fatalf("the session is %s, want paused", st)
	}
	home, _ := os.ReadFile(filepath.Join(ws, "home.txt"))
	private := filepath.Join(privateBase(c), created.ID)
	if !strings.HasPrefix(strings.TrimSpace(string(home)), private+"/") || isGone(private) {
		t.Fatalf("a paused session's private directory %s (the command's HOME %q) is gone", private, home)
	}
	if code, body, _ := s.send(t, request{"POST", "/v1/sessions/" + created.ID + "/terminate", `{"reason":"enough"}`, json1}); code != 200 {
		t.Fatalf("terminate: %d %s", code, body)
	}
	if !isGone(private) {
		t.Fatalf("the private directory %s outlived its terminated session", private)
	}
}

// agentloop run paused from another process keeps the session's private
// directory; agentloop sessions terminate, ending it there, or delete
// takes it.
func TestEndingAPausedRunTakesItsPrivateDirectory(t *testing.T) {
	for _, end := range []string{"terminate", "delete"} {
		t.Run(end, func(t *testing.T) {
			c := rootSandboxCLI(t, "it checks the private directories agentloop running as root gives its commands")
			base := t.TempDir()
			os.Chmod(base, 0o711)
			project := filepath.Join(base, "project")
			os.Mkdir(project, 0o755)
			os.Chown(project, 4242, 4242)
			script := writeScript(t, `{"steps":[{"tool_calls":[{"name":"execute_command","arguments":{"command":"echo \"$HOME\" > home.txt; : > started; while [ ! -e release ]; do sleep 0.05; done"}}]},{"text":"done"}]}`)
			a := c.start("run", "--sandbox", "landlock", "--yes", "--model", "script:"+script, "--dir", project, "wait")
			id := waitForStatus(t, c, "running", a)
			for deadline := time.Now().Add(time.Minute); isGone(filepath.Join(project, "started")); time.Sleep(20 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("the command never started\n%s", a.err.String())
				}
			}
			if out, errOut, code := c.run("", "sessions", "pause", id, "later"); code != 0 {
				t.Fatalf("pause: exit %d\n%s\n%s", code, out, errOut)
			}
			if err := os.WriteFile(filepath.Join(project, "release"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
			if code := a.wait(t); code != exitPaused {
				t.Fatalf("the run exited %d, want %d (paused)\n%s", code, exitPaused, a.err.String())
			}
			home, _ := os.ReadFile(filepath.Join(project, "home.txt"))
			private := filepath.Join(privateBase(c), id)
			if !strings.HasPrefix(strings.TrimSpace(string(home)), private+"/") || isGone(private) {
				t.Fatalf("a paused session's private directory %s (the command's HOME %q) is gone", private, home)
			}
			if out, errOut, code := c.run("", "sessions", end, id); code != 0 {
				t.Fatalf("%s: exit %d\n%s\n%s", end, code, out, errOut)
			}
			if !isGone(private) {
				t.Fatalf("the private directory %s outlived the %s", private, end)
			}
		})
	}
}
