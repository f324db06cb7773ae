package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/agentloop/agentloop/sandbox"
	"github.com/agentloop/agentloop/sandbox/sandboxtest"
)

var (
	binaryOnce sync.Once
	binaryPath string
	binaryErr  error
)

// agentloopBinary builds the real binary once for the sandbox tests.
func agentloopBinary(t *testing.T) string {
	t.Helper()
	binaryOnce.Do(func() {
		dir, err := os.MkdirTemp("", "agentloop-e2e-bin")
		if err != nil {
			binaryErr = err
			return
		}
		binaryPath = filepath.Join(dir, "agentloop")
		out, err := exec.Command("go", "build", "-o", binaryPath, "../cmd/agentloop").CombinedOutput()
		if err != nil {
			binaryErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if binaryErr != nil {
		t.Fatal(binaryErr)
	}
	return binaryPath
}

// escapeWorld is a machine with two workspaces (alpha runs the session,
// beta is another tenant's), the session database, a file in /tmp that
// another session reads, and a listener on a loopback port the policy
// does not allow.
type escapeWorld struct {
	root, alpha, beta, db, shared string
	secret                        string
	port                          int
	accepted                      atomic.Int32
}

const canary = "ESCAPE_CANARY_value_7f3a"

func newEscapeWorld(t *testing.T) *escapeWorld {
	t.Helper()
	alpha := sandboxtest.Dir(t)
	w := &escapeWorld{root: filepath.Dir(alpha), alpha: alpha, secret: "beta-secret-31337"}
	w.beta = filepath.Join(w.root, "beta")
	if err := os.Mkdir(w.beta, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(w.beta, "secret.txt"), []byte(w.secret), 0o666); err != nil {
		t.Fatal(err)
	}
	sandboxtest.Own(t, w.beta) // only the sandbox keeps alpha's commands out, not file modes
	data := filepath.Join(w.root, "data")
	if err := os.Mkdir(data, 0o755); err != nil {
		t.Fatal(err)
	}
	w.db = filepath.Join(data, "s.db")
	shared, err := os.CreateTemp("", "agentloop-escape-shared-")
	if err != nil {
		t.Fatal(err)
	}
	shared.WriteString("another session's file")
	shared.Close()
	os.Chmod(shared.Name(), 0o666)
	w.shared = shared.Name()
	t.Cleanup(func() { os.Remove(w.shared) })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	w.port = ln.Addr().(*net.TCPAddr).Port
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			w.accepted.Add(1)
			c.Close()
		}
	}()
	return w
}

// attempts are escapes a model's execute_command tries. Each prints
// ESC_<n>_OK only when the escape worked (the word is split in the
// command, so only the output can hold it).
func (w *escapeWorld) attempts() []string {
	beta := filepath.Join(w.beta, "secret.txt")
	rel := "../" + filepath.Base(w.beta) + "/secret.txt"
	return []string{
		"cat " + beta,
		"cat " + rel,
		"echo pwned > " + beta,
		"cp " + beta + " ./copied && cat ./copied",
		"ls " + w.beta,
		"mv " + w.beta + " " + w.beta + "-moved",
		"chmod 777 " + w.beta,
		"cat " + w.db,
		"cat " + w.db + "-wal",
		"cp " + w.db + " ./db.copy",
		"echo pwned >> " + w.db,
		"ls " + filepath.Dir(w.db),
		"ls /root",
		"ls /root/.ssh",
		"ls /root/.config/agentloop",
		"cat /etc/shadow",
		// Inside a PID namespace (bwrap) /proc/1 is the sandbox's own
		// first process: what counts is whether agentloop's environment
		// (its canary) shows.
		"cat /proc/1/environ | grep -a " + canary[:12],
		"for p in /proc/[0-9]*; do cat $p/environ; done | grep -a " + canary[:12],
		"for p in /proc/[0-9]*; do head -c 16 $p/mem; done | grep -q .",
		"cat /proc/*/cmdline | grep -a 'task-[c]anary'", // the pattern does not match its own command line
		"ln -s " + beta + " link && cat link",
		"ln " + beta + " hard && cat hard",
		"cat ./../" + filepath.Base(w.beta) + "/secret.txt",
		"cat /proc/self/root" + beta,
		"cat /proc/self/cwd/" + rel,
		"unshare -r cat " + beta,
		// bwrap gives each session its own /tmp: writing a file of that
		// name there is no escape; reaching the other session's is.
		"echo pwned >> " + w.shared + " && grep -q \"another session\" " + w.shared,
		"grep -a \"another session\" " + w.shared,
		"touch /etc/agentloop-escape",
		"touch /usr/local/agentloop-escape",
		"touch /tmp/../" + filepath.Base(w.root) + "/escape",
		"echo pwned > " + filepath.Dir(agentloopBinaryPathOrEmpty()) + "/escape",
		fmt.Sprintf("bash -c 'exec 3<>/dev/tcp/127.0.0.1/%d'", w.port),
		fmt.Sprintf("curl -s -m 3 http://127.0.0.1:%d/", w.port),
		// $PPID is the supervisor, or inside bwrap the sandbox's own init:
		// judged by the run going on unharmed, never by the output.
		"kill -9 $PPID; false",
		"test \"$(id -u)\" = 0",
		"su root -c true",
		"mount -t tmpfs none " + w.alpha,
		"dd if=/dev/zero of=big bs=1M seek=1100 count=1 2>&1",
		"dd if=/dev/zero of=/dev/null bs=9G count=1",
		// The sleeps that did start are left behind: the supervisor stops
		// and reaps them, or (as zombies an init that never reaps keeps)
		// they would starve the next commands of the sandbox user.
		"i=0; while [ $i -lt 1500 ]; do sleep 20 & i=$((i+1)); done",
		"kill -9 -1; sleep 1",
	}
}

func agentloopBinaryPathOrEmpty() string { return binaryPath }

// knownGaps are attempts a backend does not block, by their start:
// Landlock does not restrict metadata changes (chmod, chown, utimes), so a
// command can change the mode of a file of the same uid outside the
// workspace (it still cannot read or write it). bwrap does not show it.
var knownGaps = map[sandbox.Backend]string{sandbox.Landlock: "chmod "}

// script is a scripted model that runs each attempt, then answers.
func (w *escapeWorld) script(t *testing.T, attempts []string) string {
	t.Helper()
	var steps []map[string]any
	for i, a := range attempts {
		cmd := fmt.Sprintf("( %s ) && echo ESC_%d_\"OK\"", a, i)
		steps = append(steps, map[string]any{
			"text":       fmt.Sprintf("attempt %d", i),
			"tool_calls": []map[string]any{{"name": "execute_command", "arguments": map[string]any{"command": cmd, "timeout_seconds": 20}}},
		})
	}
	steps = append(steps, map[string]any{"text": "done", "finish_reason": "stop"})
	b, _ := json.Marshal(map[string]any{"steps": steps})
	path := filepath.Join(t.TempDir(), "escape.json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// The escape suite: each attempt fails and nothing outside the workspace
// changes, under each backend, through the real binary.
func TestSandboxEscapes(t *testing.T) {
	for _, b := range sandboxtest.Backends {
		t.Run(string(b), func(t *testing.T) {
			sandboxtest.Require(t, b, sandbox.NoNetwork)
			bin := agentloopBinary(t)
			w := newEscapeWorld(t)
			attempts := w.attempts()
			// The process limit is the sandbox user's, shared with every
			// other session (and test package) running as it: the fork bomb
			// is held to 256 so it cannot starve them while it lives.
			cfg := filepath.Join(t.TempDir(), "config.yaml")
			os.WriteFile(cfg, []byte("profiles:\n  escape:\n    sandbox_limits:\n      processes: 256\n"), 0o644)
			cmd := exec.Command(bin, "run", "--yes", "--quiet", "--sandbox", string(b), "--network", "none", "--config", cfg, "--profile", "escape",
				"--db", w.db, "--dir", w.alpha, "--max-iterations", fmt.Sprint(len(attempts)+2), "--no-progress", "0",
				"--model", "script:"+w.script(t, attempts), "escape task-canary")
			cmd.Env = append(os.Environ(), "AGENTLOOP_SANDBOX=", canary[:12]+"="+canary, "AGENTLOOP_CONFIG=", "XDG_CONFIG_HOME="+t.TempDir())
			var out, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &stderr
			err := cmd.Run()
			if err != nil {
				t.Fatalf("agentloop run did not complete (the server was harmed?): %v\n%s\n%s", err, out.String(), stderr.String())
			}
			results := w.toolResults(t, bin)
			if len(results) != len(attempts) {
				t.Fatalf("%d tool results for %d attempts", len(results), len(attempts))
			}
			blocked := 0
			for i, a := range attempts {
				res := results[i]
				escaped := strings.Contains(res, fmt.Sprintf("ESC_%d_OK", i)) || strings.Contains(res, w.secret) || strings.Contains(res, canary)
				if gap := knownGaps[b]; gap != "" && strings.HasPrefix(a, gap) {
					// Stated in the README's threat model; if it starts being
					// blocked, that is news worth a look too.
					if !escaped {
						t.Errorf("attempt %d (%s), a known gap of %s, was blocked: update knownGaps and the README", i, a, b)
					}
					t.Logf("attempt %d NOT blocked under %s (known gap): %s", i, b, a)
					os.Chmod(w.beta, 0o755)
					continue
				}
				if escaped {
					t.Errorf("attempt %d escaped under %s: %s\n%s", i, b, a, res)
					continue
				}
				blocked++
			}
			t.Logf("%s: %d of %d attempts blocked", b, blocked, len(attempts))
			w.nothingChanged(t)
		})
	}
}

// toolResults are the outputs of the session's tool calls, in order.
func (w *escapeWorld) toolResults(t *testing.T, bin string) []string {
	t.Helper()
	list, err := exec.Command(bin, "sessions", "list", "--json", "--db", w.db).Output()
	if err != nil {
		t.Fatalf("sessions list: %v", err)
	}
	var sessions []struct{ ID string }
	if err := json.Unmarshal(list, &sessions); err != nil || len(sessions) != 1 {
		t.Fatalf("sessions list: %v %s", err, list)
	}
	events, err := exec.Command(bin, "sessions", "show", "--events", "--db", w.db, sessions[0].ID).Output()
	if err != nil {
		t.Fatalf("sessions show: %v", err)
	}
	var out []string
	for _, line := range strings.Split(string(events), "\n") {
		var ev struct {
			Type string          `json:"type"`
			Data json.RawMessage `json:"data"`
		}
		if json.Unmarshal([]byte(line), &ev) != nil || ev.Type != "tool.finished" {
			continue
		}
		out = append(out, string(ev.Data))
	}
	return out
}

// nothingChanged checks what lives outside the session's workspace.
func (w *escapeWorld) nothingChanged(t *testing.T) {
	t.Helper()
	if got, err := os.ReadFile(filepath.Join(w.beta, "secret.txt")); err != nil || string(got) != w.secret {
		t.Errorf("the other workspace's file: %q, %v", got, err)
	}
	if fi, err := os.Stat(w.beta); err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("the other workspace: %v, %v", fi, err)
	}
	if got, _ := os.ReadFile(w.shared); string(got) != "another session's file" {
		t.Errorf("the other session's /tmp file holds %q", got)
	}
	for _, p := range []string{"/etc/agentloop-escape", "/usr/local/agentloop-escape", filepath.Join(w.root, "escape"), filepath.Join(filepath.Dir(binaryPath), "escape")} {
		if _, err := os.Stat(p); err == nil {
			os.Remove(p)
			t.Errorf("%s was created", p)
		}
	}
	if db, _ := os.ReadFile(w.db); bytes.HasSuffix(db, []byte("pwned\n")) {
		t.Error("the database was written")
	}
	for _, name := range []string{"copied", "db.copy", "hard"} {
		if b, err := os.ReadFile(filepath.Join(w.alpha, name)); err == nil && len(b) > 0 {
			t.Errorf("%s in the workspace holds %d bytes from outside", name, len(b))
		}
	}
	if n := w.accepted.Load(); n != 0 {
		t.Errorf("the listener outside the policy accepted %d connections", n)
	}
}

// The ordinary path still works inside the sandbox: go test in a Go
// module workspace builds and passes (network full, as agentloop run
// defaults to), with its caches in the session's private directory.
func TestGoTestInsideSandbox(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go on PATH")
	}
	for _, b := range sandboxtest.Backends {
		t.Run(string(b), func(t *testing.T) {
			sandboxtest.Require(t, b, sandbox.FullNetwork)
			bin := agentloopBinary(t)
			ws := sandboxtest.Dir(t)
			files := map[string]string{
				"go.mod":       "module example.com/calc\n\ngo 1.21\n",
				"calc.go":      "package calc\n\nfunc Add(a, b int) int { return a + b }\n",
				"calc_test.go": "package calc\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif Add(2, 3) != 5 {\n\t\tt.Fatal(Add(2, 3))\n\t}\n}\n",
			}
			for name, body := range files {
				if err := os.WriteFile(filepath.Join(ws, name), []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			sandboxtest.Own(t, ws)
			script := filepath.Join(t.TempDir(), "gotest.json")
			os.WriteFile(script, []byte(`{"steps": [
  {"tool_calls": [{"name": "execute_command", "arguments": {"command": "go test ./... && id -u", "timeout_seconds": 300}}]},
  {"text": "tests pass", "finish_reason": "stop", "expect": {"last_message_contains": "ok  \texample.com/calc"}}
]}`), 0o644)
			db := filepath.Join(t.TempDir(), "s.db")
			cmd := exec.Command(bin, "run", "--yes", "--quiet", "--sandbox", string(b), "--network", "full", "--db", db, "--dir", ws,
				"--model", "script:"+script, "run the tests")
			cmd.Env = append(os.Environ(), "AGENTLOOP_SANDBOX=", "AGENTLOOP_CONFIG=", "XDG_CONFIG_HOME="+t.TempDir())
			if out, err := cmd.CombinedOutput(); err != nil {
				show, _ := exec.Command(bin, "sessions", "show", "--db", db, "--events").CombinedOutput()
				if list, _ := exec.Command(bin, "sessions", "list", "--db", db, "--json").Output(); len(list) > 0 {
					var ss []struct{ ID string }
					if json.Unmarshal(list, &ss) == nil && len(ss) > 0 {
						show, _ = exec.Command(bin, "sessions", "show", "--db", db, ss[0].ID).CombinedOutput()
					}
				}
				t.Fatalf("go test inside the %s sandbox: %v\n%s\n%s", b, err, out, show)
			}
		})
	}
}
