package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/agentloop/agentloop/sandbox"
	"github.com/agentloop/agentloop/sandbox/sandboxtest"
	"github.com/agentloop/agentloop/store/postgres/pgtest"
)

// The escape suite's other half: `agentloop serve --auth keys` with two
// tenants. Tenant beta has a secret in its workspace and a command still
// running; tenant alpha's session makes every attempt below through its
// scripted model's execute_command, and each must fail with nothing
// outside alpha's workspace changed: beta's files, beta's running command
// and private directory, the database and its -wal/-shm, the keys, the
// sessions, the server process and an outside loopback listener.

// serveAttempt is one escape a served session's command tries.
type serveAttempt struct {
	name string // the row of the table
	cmd  string
	// ownEffect: the command may succeed inside the session's own
	// sandbox (a write to its private /tmp, a look at its own namespace's
	// /proc/1); only leaks, or what the other tenant or the host sees
	// afterwards, say whether it escaped.
	ownEffect bool
	// leaks are strings whose presence in the result means an escape.
	leaks []string
}

// serveGap says why backend b is known not to block an attempt (a
// kernel limit stated in the README's threat model), or "". Such an
// attempt must be NOT blocked: if it starts being blocked, that is news
// (update this and the README).
func serveGap(b sandbox.Backend, attempt string) string {
	switch {
	case b == sandbox.Landlock && sandbox.LandlockABI() < 9 && strings.HasPrefix(attempt, "postgres: ") && strings.Contains(attempt, "unix socket"):
		return fmt.Sprintf("Landlock before ABI 9 (this kernel: %d) does not restrict connect(2) to a pathname UNIX socket, so only the file modes guard PostgreSQL's socket (bwrap does not show it)", sandbox.LandlockABI())
	}
	return ""
}

// syncBuffer is a bytes.Buffer a process writes while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// served is a running `agentloop serve --auth keys` and its world.
type served struct {
	bin, base, data, db, workspaces string
	url                             string
	port                            int
	proc                            *exec.Cmd
	exited                          chan struct{}
	stderr                          *syncBuffer
	keys                            map[string]string // tenant → secret
	outsidePort                     int
	accepted                        atomic.Int32
}

var servedListening = regexp.MustCompile(`listening on (http://127\.0\.0\.1:([0-9]+))`)

// startServed creates keys for tenants alpha and beta and starts the
// server with backend b on db (a SQLite path under s.data when "").
func startServed(t *testing.T, b sandbox.Backend, db string) *served {
	t.Helper()
	s := &served{bin: agentloopBinary(t), keys: map[string]string{}, exited: make(chan struct{}), stderr: &syncBuffer{}}
	base, err := os.MkdirTemp("", "agentloop-serve-escape-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	// Open to the sandbox user (0755): only the sandbox keeps a tenant's
	// command out of the data directory, not the file modes.
	os.Chmod(base, 0o755)
	s.base, s.data, s.workspaces = base, filepath.Join(base, "data"), filepath.Join(base, "ws")
	if err := os.Mkdir(s.data, 0o755); err != nil {
		t.Fatal(err)
	}
	s.db = db
	if db == "" {
		s.db = filepath.Join(s.data, "s.db")
	}
	for _, tenant := range []string{"alpha", "beta"} {
		var out, errb bytes.Buffer
		cmd := exec.Command(s.bin, "keys", "create", "--db", s.db, "--tenant", tenant, "--role", "admin")
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil || !strings.Contains(errb.String(), "for tenant "+tenant) {
			t.Fatalf("keys create %s: %v\n%s", tenant, err, errb.String())
		}
		s.keys[tenant] = strings.TrimSpace(out.String())
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	s.outsidePort = ln.Addr().(*net.TCPAddr).Port
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.accepted.Add(1)
			c.Close()
		}
	}()

	s.proc = exec.Command(s.bin, "serve", "--db", s.db, "--addr", "127.0.0.1:0", "--auth", "keys", "--yes", "--allow-script-models",
		"--sandbox", string(b), "--workspaces", s.workspaces, "--grace", "5s", "--rate-limit", "0")
	s.proc.Env = append(os.Environ(), "AGENTLOOP_SANDBOX=", "AGENTLOOP_NETWORK=", "AGENTLOOP_CONFIG=", "XDG_CONFIG_HOME="+t.TempDir(),
		canary[:12]+"="+canary)
	s.proc.Stdout, s.proc.Stderr = io.Discard, s.stderr
	// A descriptor the server inherits without close-on-exec, as from a
	// service manager or a parent's pipe: it must not reach a command.
	inherited, err := os.Open(s.fdFile(t))
	if err != nil {
		t.Fatal(err)
	}
	defer inherited.Close()
	s.proc.ExtraFiles = []*os.File{inherited}
	if err := s.proc.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { s.proc.Wait(); close(s.exited) }()
	// SIGTERM first: the server's checkpoints are git processes of its
	// own, which a SIGKILL would leave writing into the directories the
	// test then removes.
	t.Cleanup(func() {
		s.proc.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.exited:
		case <-time.After(20 * time.Second):
			s.proc.Process.Kill()
			<-s.exited
		}
	})
	deadline := time.Now().Add(60 * time.Second) // a bound on a hang, not a measure
	for s.url == "" {
		if m := servedListening.FindStringSubmatch(s.stderr.String()); m != nil {
			s.url = m[1]
			s.port, _ = strconv.Atoi(m[2])
			break
		}
		select {
		case <-s.exited:
			t.Fatalf("the server did not start:\n%s", s.stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server did not start:\n%s", s.stderr.String())
		}
	}
	for {
		if code, _ := s.do(t, "", "GET", "/readyz", ""); code == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server was never ready:\n%s", s.stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	return s
}

// fdCanary is in the file the server inherits a descriptor of.
const fdCanary = "INHERITED_FD_canary_51c2"

func (s *served) fdFile(t *testing.T) string {
	t.Helper()
	path := filepath.Join(s.data, "inherited")
	if err := os.WriteFile(path, []byte(fdCanary), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// do sends one request as tenant (no key when "").
func (s *served) do(t *testing.T, tenant, method, path, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, s.url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if tenant != "" {
		req.Header.Set("Authorization", "Bearer "+s.keys[tenant])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// alive says whether the server process still runs and answers.
func (s *served) alive(t *testing.T) error {
	select {
	case <-s.exited:
		return fmt.Errorf("the server exited: %v\n%s", s.proc.ProcessState, s.stderr.String())
	default:
	}
	if code, body := s.do(t, "", "GET", "/healthz", ""); code != 200 {
		return fmt.Errorf("/healthz: %d %s", code, body)
	}
	return nil
}

// start starts a session of tenant's in workspace with a scripted model
// playing steps, and returns its id.
func (s *served) start(t *testing.T, tenant, workspace string, steps []map[string]any) string {
	t.Helper()
	steps = append(steps, map[string]any{"text": "done", "finish_reason": "stop"})
	b, _ := json.Marshal(map[string]any{"steps": steps})
	script := filepath.Join(t.TempDir(), tenant+"-"+workspace+".json")
	if err := os.WriteFile(script, b, 0o644); err != nil {
		t.Fatal(err)
	}
	req, _ := json.Marshal(map[string]any{"task": "escape task-canary", "workspace": workspace, "model": "script:" + script,
		"max_iterations": len(steps) + 3})
	code, body := s.do(t, tenant, "POST", "/v1/sessions", string(req))
	if code != 201 {
		t.Fatalf("%s: create a session: %d %s", tenant, code, body)
	}
	var created struct{ ID string }
	if err := json.Unmarshal([]byte(body), &created); err != nil || created.ID == "" {
		t.Fatalf("%s: create a session: %v %s", tenant, err, body)
	}
	return created.ID
}

// wait waits until the session has stopped running and returns its status.
func (s *served) wait(t *testing.T, tenant, id string) string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Minute) // a bound on a hang, not a measure
	for time.Now().Before(deadline) {
		code, body := s.do(t, tenant, "GET", "/v1/sessions/"+id, "")
		var st struct{ Status, Reason, Detail string }
		json.Unmarshal([]byte(body), &st)
		if code == 200 && st.Status != "running" && st.Status != "idle" && st.Status != "" {
			if st.Status != "completed" {
				var all map[string]any
				json.Unmarshal([]byte(body), &all)
				delete(all, "system_prompt")
				delete(all, "messages")
				b, _ := json.Marshal(all)
				t.Logf("session %s: %.3000s", id, b)
			}
			return st.Status
		}
		if err := s.alive(t); err != nil {
			t.Fatalf("waiting for session %s: %v", id, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("session %s never finished\n%s", id, s.stderr.String())
	return ""
}

// results are the outputs of the session's tool calls, in order.
func (s *served) results(t *testing.T, tenant, id string) []string {
	t.Helper()
	code, body := s.do(t, tenant, "GET", "/v1/sessions/"+id+"/events?limit=1000", "")
	if code != 200 {
		t.Fatalf("events of %s: %d %s", id, code, body)
	}
	var page struct {
		Events []struct {
			Type string          `json:"type"`
			Data json.RawMessage `json:"data"`
		}
	}
	if err := json.Unmarshal([]byte(body), &page); err != nil {
		t.Fatalf("events of %s: %v", id, err)
	}
	var out []string
	for _, ev := range page.Events {
		if ev.Type == "tool.finished" {
			out = append(out, string(ev.Data))
		}
	}
	return out
}

// command is a scripted step running one shell command.
func command(text, cmd string, timeout int) map[string]any {
	return map[string]any{"text": text, "tool_calls": []map[string]any{{"name": "execute_command",
		"arguments": map[string]any{"command": cmd, "timeout_seconds": timeout}}}}
}

// snapshot is what the store holds that no command may change: the
// sessions and the keys, as the CLI lists them.
func (s *served) snapshot(t *testing.T) string {
	t.Helper()
	var out bytes.Buffer
	for _, args := range [][]string{{"sessions", "list", "--json", "--db", s.db}, {"keys", "list", "--db", s.db}} {
		b, err := exec.Command(s.bin, args...).Output()
		if err != nil {
			t.Fatalf("%s: %v", strings.Join(args, " "), err)
		}
		out.Write(b)
	}
	return out.String()
}

// pidsIn are the processes whose working directory is dir.
func pidsIn(dir string) []string {
	var pids []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		if cwd, err := os.Readlink(filepath.Join("/proc", e.Name(), "cwd")); err == nil && cwd == dir {
			pids = append(pids, e.Name())
		}
	}
	return pids
}

// escapeTable collects attempt × backend → blocked / not blocked.
type escapeTable struct {
	mu   sync.Mutex
	rows []string
	cell map[string]map[sandbox.Backend]string
}

func (e *escapeTable) set(row string, b sandbox.Backend, v string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.cell == nil {
		e.cell = map[string]map[sandbox.Backend]string{}
	}
	if e.cell[row] == nil {
		e.cell[row] = map[sandbox.Backend]string{}
		e.rows = append(e.rows, row)
	}
	e.cell[row][b] = v
}

func (e *escapeTable) log(t *testing.T, title string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.rows) == 0 {
		return
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "%s\n%-48s", title, "attempt")
	for _, b := range sandboxtest.Backends {
		fmt.Fprintf(&sb, " | %-28s", b)
	}
	sb.WriteString("\n")
	for _, r := range e.rows {
		fmt.Fprintf(&sb, "%-48s", r)
		for _, b := range sandboxtest.Backends {
			v := e.cell[r][b]
			if v == "" {
				v = "(not run)"
			}
			fmt.Fprintf(&sb, " | %-28s", v)
		}
		sb.WriteString("\n")
	}
	t.Log(sb.String())
}

// judge records each attempt's outcome in the table and fails the test
// for an escape, or for a known gap that is suddenly blocked. escapedBy
// says why an attempt escaped by what its result shows ("" if not);
// extra are escapes seen outside the results, by attempt name.
func judge(t *testing.T, table *escapeTable, b sandbox.Backend, attempts []serveAttempt, results []string, escapedBy func(i int, res string) string, extra map[string]string) {
	t.Helper()
	if len(results) != len(attempts) {
		t.Fatalf("%d tool results for %d attempts", len(results), len(attempts))
	}
	blocked := 0
	for i, a := range attempts {
		why := escapedBy(i, results[i])
		if why == "" {
			why = extra[a.name]
		}
		if gap := serveGap(b, a.name); gap != "" {
			if why == "" {
				t.Errorf("%q, a known gap of %s (%s), was blocked: update serveGap and the README", a.name, b, gap)
				table.set(a.name, b, "blocked (gap closed?)")
				continue
			}
			t.Logf("%q NOT blocked under %s, a known kernel limit: %s", a.name, b, gap)
			table.set(a.name, b, "NOT blocked (known gap)")
			continue
		}
		if why != "" {
			t.Errorf("%q escaped under %s: %s\ncommand: %s\nresult: %.1500s", a.name, b, why, a.cmd, results[i])
			table.set(a.name, b, "NOT BLOCKED")
			continue
		}
		blocked++
		table.set(a.name, b, "blocked")
	}
	t.Logf("%s: %d of %d attempts blocked", b, blocked, len(attempts))
}

// attempt runs the attempts in a session of tenant's and returns the
// session's id and the results, one per attempt.
func (s *served) attempt(t *testing.T, tenant, workspace string, attempts []serveAttempt) (string, []string) {
	t.Helper()
	var steps []map[string]any
	for i, a := range attempts {
		// Each step changes the workspace, so the session is not ended for
		// making no progress (after 5 steps by default).
		steps = append(steps, command(a.name, fmt.Sprintf("echo > step-%d; ( %s ) && echo ESC_%d_\"OK\"", i, a.cmd, i), 30))
	}
	id := s.start(t, tenant, workspace, steps)
	if st := s.wait(t, tenant, id); st != "completed" {
		t.Errorf("%s's session is %s", tenant, st)
	}
	return id, s.results(t, tenant, id)
}

// escapedBy says why attempt i escaped by what its result shows ("" if
// not): a secret, the server's environment or the database in it, its
// success marker (unless it may succeed in its own sandbox), a leak.
func escapedBy(attempts []serveAttempt, secrets ...string) func(i int, res string) string {
	return func(i int, res string) string {
		for _, sec := range secrets {
			if strings.Contains(res, sec) {
				return fmt.Sprintf("the result holds %q", sec)
			}
		}
		switch {
		case strings.Contains(res, canary):
			return "the server's environment is in the result"
		case strings.Contains(res, fdCanary):
			return "the server's inherited descriptor was read"
		case strings.Contains(res, "SQLite format"):
			return "the database is in the result"
		case !attempts[i].ownEffect && strings.Contains(res, fmt.Sprintf("ESC_%d_OK", i)):
			return "the command succeeded"
		}
		for _, l := range attempts[i].leaks {
			if strings.Contains(res, l) {
				return fmt.Sprintf("the result holds %q", l)
			}
		}
		return ""
	}
}

// The escape suite through `agentloop serve --auth keys` with two
// tenants, for each backend.
func TestSandboxServeEscapes(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: it checks a server that gives its tenants' commands to the sandbox user")
	}
	table := &escapeTable{}
	t.Cleanup(func() {
		table.log(t, "agentloop serve --auth keys, tenant alpha's command against tenant beta and the server:")
	})
	for _, b := range sandboxtest.Backends {
		t.Run(string(b), func(t *testing.T) {
			sandboxtest.Require(t, b, sandbox.NoNetwork)
			s := startServed(t, b, "")
			betaWS := filepath.Join(s.workspaces, "tenants", "beta", "beta-proj")
			alphaWS := filepath.Join(s.workspaces, "tenants", "alpha", "alpha-proj")
			secret := "beta-secret-31337"

			// Beta: a secret in its workspace, then a command that keeps
			// running until the test releases it, then a look at /tmp and
			// its private directory for what alpha tried to plant there.
			planted := fmt.Sprintf("agentloop-serve-escape-%d", time.Now().UnixNano())
			betaID := s.start(t, "beta", "beta-proj", []map[string]any{
				command("plant a secret", "printf %s "+secret+" > secret.txt && : > started && while [ ! -e release ]; do sleep 0.1; done; echo beta-\"survived\"", 600),
				command("look around", "cat /tmp/"+planted+" \"$TMPDIR/planted\" \"$HOME/planted\"; echo beta-\"looked\"", 60),
			})
			for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(20 * time.Millisecond) {
				if _, err := os.Stat(filepath.Join(betaWS, "started")); err == nil {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("beta's command never started\n%s", s.stderr.String())
				}
			}
			betaPIDs := pidsIn(betaWS)
			if len(betaPIDs) == 0 {
				t.Fatalf("no process of beta's command runs in %s", betaWS)
			}
			betaPriv := filepath.Join(sandbox.DefaultPrivateBase(), betaID)
			if _, err := os.Stat(betaPriv); err != nil {
				t.Fatalf("beta's private directory: %v", err)
			}
			// Readable by the sandbox user but for the sandbox: the
			// database files (beta's workspace is already the sandbox
			// user's, as alpha's is).
			for _, f := range []string{s.db, s.db + "-wal", s.db + "-shm"} {
				if err := os.Chmod(f, 0o644); err != nil {
					t.Fatalf("the database file %s: %v", f, err)
				}
			}
			before := s.snapshot(t)
			pid := s.proc.Process.Pid

			attempts := serveAttempts(s, betaWS, betaPriv, betaPIDs, planted, pid)
			alphaID, results := s.attempt(t, "alpha", "alpha-proj", attempts)

			// Release beta's command; it must have lived through it all.
			if err := os.WriteFile(filepath.Join(betaWS, "release"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
			if st := s.wait(t, "beta", betaID); st != "completed" {
				t.Errorf("beta's session is %s", st)
			}
			betaResults := s.results(t, "beta", betaID)
			extra := map[string]string{}
			if len(betaResults) != 2 || !strings.Contains(betaResults[0], "beta-survived") {
				extra["kill beta's running command"] = fmt.Sprintf("beta's command did not finish normally: %.500s", betaResults)
				extra["kill every process it may signal"] = extra["kill beta's running command"]
			}
			if len(betaResults) == 2 && strings.Contains(betaResults[1], "alpha-planted") {
				extra["write /tmp for beta to read"] = "beta's session read it: " + betaResults[1]
				extra["write beta's private TMPDIR"] = extra["write /tmp for beta to read"]
			}
			if _, err := os.Stat(filepath.Join("/tmp", planted)); err == nil {
				extra["write /tmp for beta to read"] = "/tmp/" + planted + " exists on the host"
				os.Remove(filepath.Join("/tmp", planted))
			}
			for _, f := range []string{"tmp/planted", "home/planted"} {
				if _, err := os.Stat(filepath.Join(betaPriv, f)); err == nil {
					extra["write beta's private TMPDIR"] = filepath.Join(betaPriv, f) + " exists"
				}
			}
			if err := s.alive(t); err != nil {
				extra["kill the server"] = err.Error()
			}
			if n := s.accepted.Load(); n != 0 {
				extra["connect to another loopback listener"] = fmt.Sprintf("it accepted %d connections", n)
			}

			judge(t, table, b, attempts, results, escapedBy(attempts, secret), extra)

			// Nothing outside alpha's workspace changed.
			if got, err := os.ReadFile(filepath.Join(betaWS, "secret.txt")); err != nil || string(got) != secret {
				t.Errorf("beta's secret.txt: %q, %v", got, err)
			}
			var names []string
			entries, err := os.ReadDir(betaWS)
			if err != nil {
				t.Errorf("beta's workspace: %v", err)
			}
			for _, e := range entries {
				names = append(names, e.Name())
			}
			if want := []string{"release", "secret.txt", "started"}; !slices.Equal(names, want) {
				t.Errorf("beta's workspace holds %v, want %v", names, want)
			}
			if db, _ := os.ReadFile(s.db); bytes.HasSuffix(db, []byte("pwned\n")) {
				t.Error("the database was written")
			}
			for _, name := range []string{"copied", "db.copy", "hard"} {
				if b, err := os.ReadFile(filepath.Join(alphaWS, name)); err == nil && len(b) > 0 {
					t.Errorf("%s in alpha's workspace holds %d bytes from outside", name, len(b))
				}
			}
			after := s.snapshot(t)
			// Two sessions more than before (alpha's, and beta's finished),
			// nothing else: compare the ids and the keys.
			if ids := sessionIDs(t, after); !slices.Equal(ids, sortedIDs(alphaID, betaID)) {
				t.Errorf("the store holds sessions %v, want only alpha's %s and beta's %s", ids, alphaID, betaID)
			}
			if keysOf(before) != keysOf(after) {
				t.Errorf("the keys changed:\n%s\n---\n%s", keysOf(before), keysOf(after))
			}
			if err := s.alive(t); err != nil {
				t.Errorf("the server was harmed: %v", err)
			}
		})
	}
}

// serveAttempts are alpha's attempts against beta, the server and the
// machine. Each prints ESC_<n>_OK only when it worked.
func serveAttempts(s *served, betaWS, betaPriv string, betaPIDs []string, planted string, pid int) []serveAttempt {
	secret := filepath.Join(betaWS, "secret.txt")
	rel := "../../beta/beta-proj"
	py := "/usr/bin/python3" // PATH may name a python under /root, which the sandbox hides
	p := strconv.Itoa(pid)
	attempts := []serveAttempt{
		// Beta's running command first, while it surely runs.
		{name: "kill beta's running command", cmd: "kill -9 " + strings.Join(betaPIDs, " ")},
		{name: "kill every process it may signal", cmd: "kill -9 -1; sleep 1"},
		{name: "kill the server", cmd: "kill -9 " + p},
		{name: "stop the server (SIGSTOP)", cmd: "kill -STOP " + p + " && kill -CONT " + p},
		{name: "read beta's file (absolute path)", cmd: "cat " + secret},
		{name: "read beta's file (../ path)", cmd: "cat " + rel + "/secret.txt"},
		{name: "read beta's file (/proc/self/cwd/..)", cmd: "cat /proc/self/cwd/" + rel + "/secret.txt"},
		{name: "read beta's file (/proc/self/root)", cmd: "cat /proc/self/root" + secret},
		{name: "list beta's workspace (absolute path)", cmd: "ls " + betaWS},
		{name: "list beta's workspace (../ path)", cmd: "ls " + rel},
		// bwrap shows the directories leading to the session's own
		// workspace (alpha), nothing beside them.
		{name: "list the tenants' directory", cmd: "ls " + filepath.Dir(filepath.Dir(betaWS)), ownEffect: true, leaks: []string{"beta"}},
		{name: "write beta's file", cmd: "echo pwned > " + secret},
		{name: "create a file in beta's workspace", cmd: "echo pwned > " + filepath.Join(betaWS, "planted")},
		{name: "create a file via ../", cmd: "echo pwned > " + rel + "/planted2"},
		{name: "copy beta's file", cmd: "cp " + secret + " ./copied && cat ./copied"},
		{name: "symlink to beta's file", cmd: "ln -s " + secret + " link && cat link"},
		{name: "hard link to beta's file", cmd: "ln " + secret + " hard && cat hard"},
		{name: "move beta's workspace", cmd: "mv " + betaWS + " " + betaWS + "-moved"},
		{name: "read the database", cmd: "head -c 64 " + s.db},
		{name: "read the database's -wal", cmd: "cat " + s.db + "-wal > /dev/null"},
		{name: "read the database's -shm", cmd: "cat " + s.db + "-shm > /dev/null"},
		{name: "query the database (sqlite3)", cmd: "sqlite3 -readonly " + s.db + " 'select count(*) from sqlite_master'"},
		{name: "copy the database", cmd: "cp " + s.db + " ./db.copy"},
		{name: "write the database", cmd: "echo pwned >> " + s.db},
		{name: "list the data directory", cmd: "ls " + s.data},
		{name: "connect to the API port (/dev/tcp)", cmd: fmt.Sprintf("bash -c 'exec 3<>/dev/tcp/127.0.0.1/%d'", s.port)},
		{name: "create a session on the API, no key", cmd: fmt.Sprintf(`curl -s -m 5 -X POST -H 'Content-Type: application/json' -d '{"task":"x","workspace":"x"}' http://127.0.0.1:%d/v1/sessions`, s.port)},
		{name: "list keys on the API, no key", cmd: fmt.Sprintf("curl -s -m 5 http://127.0.0.1:%d/v1/keys", s.port)},
		{name: "connect to another loopback listener", cmd: fmt.Sprintf("bash -c 'exec 3<>/dev/tcp/127.0.0.1/%d'", s.outsidePort)},
		{name: "curl another loopback listener", cmd: fmt.Sprintf("curl -s -m 5 http://localhost:%d/", s.outsidePort)},
		{name: "write /tmp for beta to read", cmd: "echo alpha-planted > /tmp/" + planted, ownEffect: true},
		{name: "write beta's private TMPDIR", cmd: "echo alpha-planted > " + filepath.Join(betaPriv, "tmp", "planted") + "; echo alpha-planted > " + filepath.Join(betaPriv, "home", "planted")},
		{name: "list beta's private directory", cmd: "ls " + betaPriv},
		{name: "read the server's environ", cmd: "cat /proc/" + p + "/environ"},
		{name: "read the server's cmdline", cmd: "cat /proc/" + p + "/cmdline"},
		{name: "open the server's memory", cmd: "exec 3< /proc/" + p + "/mem"},
		{name: "read the server's memory", cmd: py + ` -c 'import sys
m = [l for l in open("/proc/` + p + `/maps") if " r" in l][0]
f = open("/proc/` + p + `/mem", "rb"); f.seek(int(m.split("-")[0], 16)); sys.exit(0 if f.read(16) else 1)'`},
		{name: "read the server's syscall", cmd: "cat /proc/" + p + "/syscall"},
		// bwrap's /proc is its own PID namespace's: its pid 1 is the
		// sandbox's own; the host's init must not show.
		{name: "read the host's init (/proc/1)", cmd: "cat /proc/1/environ; cat /proc/1/cmdline", ownEffect: true, leaks: hostInit()},
		{name: "read every process's environ", cmd: "cat /proc/[0-9]*/environ 2>/dev/null | grep -a " + canary[:12]},
		{name: "ptrace the server (python)", cmd: py + ` -c 'import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
if libc.ptrace(16, ` + p + `, 0, 0) != 0: sys.exit("ptrace: " + os.strerror(ctypes.get_errno()))
os.waitpid(` + p + `, 0x40000000); libc.ptrace(17, ` + p + `, 0, 0); os.kill(` + p + `, 18)'`},
		{name: "inherited file descriptors", cmd: py + ` -c 'import os, sys
fds = []
for fd in range(3, 4096):
    try:
        os.fstat(fd)
    except OSError:
        continue
    fds.append(fd)
print("open fds above 2:", fds)
for fd in fds:
    try:
        print(fd, os.readlink("/proc/self/fd/%d" % fd))
    except OSError as e:
        print(fd, e)
    try:
        os.set_blocking(fd, False)
        print(fd, "read:", os.read(fd, 64))
    except OSError as e:
        print(fd, e)
sys.exit(0 if fds else 1)'`},
		{name: "run as root", cmd: `test "$(id -u)" = 0`},
		{name: "unshare a user namespace", cmd: "unshare -r cat " + secret},
	}
	if _, err := exec.LookPath("strace"); err == nil {
		attempts = append(attempts, serveAttempt{name: "ptrace the server (strace)", cmd: `out=$(timeout 3 strace -p ` + p + ` -o /dev/null 2>&1); echo "$out"; echo "$out" | grep -q attached`})
	}
	if _, err := exec.LookPath("gdb"); err == nil {
		attempts = append(attempts, serveAttempt{name: "ptrace the server (gdb)", cmd: `out=$(gdb -nx -batch -p ` + p + ` -ex detach 2>&1); echo "$out" | tail -3; echo "$out" | grep -q 'Inferior 1 .* detached'`})
	}
	return attempts
}

// sessionIDs are the ids in `sessions list --json` output (the start of
// a snapshot), sorted.
func sessionIDs(t *testing.T, snapshot string) []string {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(snapshot))
	var list []struct{ ID string }
	if err := dec.Decode(&list); err != nil {
		t.Fatalf("sessions list: %v", err)
	}
	var ids []string
	for _, s := range list {
		ids = append(ids, s.ID)
	}
	slices.Sort(ids)
	return ids
}

func sortedIDs(ids ...string) []string {
	slices.Sort(ids)
	return ids
}

// keysOf is the keys part of a snapshot.
func keysOf(snapshot string) string {
	if i := strings.Index(snapshot, "ID "); i >= 0 {
		return snapshot[i:]
	}
	return ""
}

// hostInit is what shows the host's pid 1 (its program), if the test can
// see it.
func hostInit() []string {
	b, err := os.ReadFile("/proc/1/cmdline")
	if err != nil || len(b) == 0 {
		return nil
	}
	arg0, _, _ := bytes.Cut(b, []byte{0})
	if len(arg0) < 6 || strings.Contains(string(arg0), "bwrap") {
		return nil
	}
	return []string{string(arg0)}
}

// The server on PostgreSQL: a tenant's command reaches neither its TCP
// port nor its unix socket (a known gap under landlock before Landlock
// ABI 9, asserted as such). Runs when AGENTLOOP_POSTGRES_TESTS is set.
func TestSandboxServePostgresEscapes(t *testing.T) {
	if os.Getenv("AGENTLOOP_POSTGRES_TESTS") == "" {
		t.Skip("set AGENTLOOP_POSTGRES_TESTS=1 to run it against a PostgreSQL server the test starts")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root: it checks a server that gives its tenants' commands to the sandbox user")
	}
	table := &escapeTable{}
	t.Cleanup(func() {
		table.log(t, "agentloop serve --auth keys on PostgreSQL, tenant alpha's command against the database:")
	})
	pg := pgtest.Own(t)
	port := pg.URL[strings.LastIndex(pg.URL, ":")+1:]
	port = port[:strings.Index(port, "/")]
	// pgtest puts the socket in a temporary directory of its own, closed
	// to other users; open it as /var/run/postgresql is (o+x), so only the
	// sandbox stands between a command and the socket.
	socks, _ := filepath.Glob(filepath.Join(os.TempDir(), "agentloop-pg-*", ".s.PGSQL."+port))
	if len(socks) != 1 {
		t.Fatalf("PostgreSQL's unix socket for port %s: %v", port, socks)
	}
	sockDir := filepath.Dir(socks[0])
	if err := os.Chmod(sockDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("psql", "-h", sockDir, "-p", port, "-U", "agentloop", "-d", "postgres", "-Atc", "select 1").CombinedOutput(); err != nil {
		t.Logf("psql over the socket from outside the sandbox: %v %s", err, out)
	}
	for _, b := range sandboxtest.Backends {
		t.Run(string(b), func(t *testing.T) {
			sandboxtest.Require(t, b, sandbox.NoNetwork)
			s := startServed(t, b, pg.URL)
			pgPort, _ := strconv.Atoi(port)
			attempts := []serveAttempt{
				{name: "postgres: connect to the TCP port", cmd: fmt.Sprintf("bash -c 'exec 3<>/dev/tcp/127.0.0.1/%d'", pgPort)},
				{name: "postgres: psql over TCP", cmd: "psql -h 127.0.0.1 -p " + port + " -U agentloop -d postgres -Atc 'select 1'"},
				{name: "postgres: connect to the unix socket", cmd: `/usr/bin/python3 -c 'import socket
s = socket.socket(socket.AF_UNIX); s.connect("` + socks[0] + `")'`},
				{name: "postgres: psql over the unix socket", cmd: "psql -h " + sockDir + " -p " + port + " -U agentloop -d postgres -Atc 'select 1'"},
				{name: "postgres: list the socket directory", cmd: "ls -a " + sockDir + " | grep -q PGSQL"},
			}
			before := s.snapshot(t)
			id, results := s.attempt(t, "alpha", "alpha-proj", attempts)
			judge(t, table, b, attempts, results, escapedBy(attempts), nil)
			// The database is shared by the backends' runs: one session
			// more than before, alpha's, nothing else.
			if ids, want := sessionIDs(t, s.snapshot(t)), sortedIDs(append(sessionIDs(t, before), id)...); !slices.Equal(ids, want) {
				t.Errorf("the store holds sessions %v, want %v", ids, want)
			}
			if keysOf(before) != keysOf(s.snapshot(t)) {
				t.Error("the keys changed")
			}
			if err := s.alive(t); err != nil {
				t.Errorf("the server was harmed: %v", err)
			}
		})
	}
}
