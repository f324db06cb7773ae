package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// pause, terminate and delete take --json, locally and against a server:
// stdout is one JSON value (the control's outcome, or the session's state
// when this process applied it), and nothing else.
func TestPauseTerminateDeleteJSON(t *testing.T) {
	c := newCLI(t)
	type outcome struct {
		ID, Outcome, Status string
	}
	type deleted struct {
		ID      string
		Deleted bool
	}
	type state struct {
		ID, Status, Reason string
		ExitCode           int `json:"exit_code"`
	}

	// Locally, a session another process runs: the pause is a request that
	// process honours; this one says so.
	a := c.start("run", "--yes", "--max-iterations", "30", "--model", "script:"+slowCommands(t, 12, "250ms"), "--dir", t.TempDir(), "run the steps")
	id := waitForStatus(t, c, "running", a)
	out, errOut, code := c.run("", "sessions", "pause", "--json", id, "lunch")
	var o outcome
	decodeJSON(t, "sessions pause", out, &o)
	if code != 0 || o.ID != id || !strings.Contains(o.Outcome, "pause") {
		t.Fatalf("pause --json: exit %d %+v\n%s", code, o, errOut)
	}
	if code := a.wait(t); code != exitPaused {
		t.Fatalf("the running process exited %d, want paused\n%s", code, a.err.String())
	}
	// A session no process runs is terminated here: its state follows.
	out, errOut, code = c.run("", "sessions", "terminate", "--json", id, "different_approach")
	var st state
	decodeJSONLoose(t, "sessions terminate", out, &st)
	if code != 0 || st.ID != id || st.Status != "terminated" || st.Reason != "different_approach" || st.ExitCode != exitTerminated {
		t.Fatalf("terminate --json: exit %d %+v\n%s", code, st, errOut)
	}
	out, errOut, code = c.run("", "sessions", "delete", "--json", id)
	var d deleted
	decodeJSON(t, "sessions delete", out, &d)
	if code != 0 || d != (deleted{id, true}) {
		t.Fatalf("delete --json: exit %d %+v\n%s", code, d, errOut)
	}

	// Against a server, the server's answer.
	s := c.serve("--yes", "--allow-script-models", "--workspaces", t.TempDir())
	remote := &cli{t: t, db: c.db, env: []string{"AGENTLOOP_SERVER=" + s.url}}
	slow := writeScript(t, `{"steps":[{"text":"thinking","delay":"10m"}]}`)
	code, body := s.post(t, "/v1/sessions", `{"task":"think","model":"script:`+slow+`"}`)
	var created struct{ ID string }
	if json.Unmarshal([]byte(body), &created); code != 201 || created.ID == "" {
		t.Fatalf("start on the server: %d %s", code, body)
	}
	id = created.ID
	for _, ctl := range [][2]string{{"pause", "pauses"}, {"terminate", "terminated"}} { // in this order
		sub, says := ctl[0], ctl[1]
		out, errOut, code = remote.run("", "sessions", sub, "--json", id)
		o = outcome{}
		decodeJSON(t, "sessions "+sub+" --server", out, &o)
		if code != 0 || o.ID != id || !strings.Contains(o.Outcome, says) {
			t.Fatalf("%s --json against a server: exit %d %+v\n%s", sub, code, o, errOut)
		}
	}
	waitServerStatus(t, s, id, "terminated")
	out, errOut, code = remote.run("", "sessions", "delete", "--json", id)
	d = deleted{}
	decodeJSON(t, "sessions delete --server", out, &d)
	if code != 0 || d != (deleted{id, true}) {
		t.Fatalf("delete --json against a server: exit %d %+v\n%s", code, d, errOut)
	}
}

// waitServerStatus waits until the server reports the session's status.
func waitServerStatus(t *testing.T, s *serving, id, want string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if got, _ := s.state(t, id); got == want {
			return
		}
		time.Sleep(20 * time.Millisecond) // polling a condition, not a guess at timing
	}
	got, reason := s.state(t, id)
	t.Fatalf("session %s is %s (%s), want %s", id, got, reason, want)
}

// sessions revoke --json against a server prints the state the revoke
// leaves, as a local revoke does.
func TestRevokeJSONAgainstAServer(t *testing.T) {
	c := newCLI(t)
	script := writeScript(t, `{"steps":[
		{"tool_calls":[{"name":"write_file","arguments":{"path":"a.txt","content":"A"}}]},
		{"tool_calls":[{"name":"write_file","arguments":{"path":"b.txt","content":"B"}}]},
		{"text":"wrote both"}]}`)
	s := c.serve("--workspaces", t.TempDir(), "--allow-script-models")
	remote := &cli{t: t, db: c.db, env: []string{"AGENTLOOP_SERVER=" + s.url}}
	if _, errOut, code := remote.run("", "run", "--model", "script:"+script, "write"); code != exitPaused {
		t.Fatalf("run --server: %d %s", code, errOut)
	}
	id := sessionID(t, c)
	pending := func() (string, string) {
		var list []struct {
			CallID   string `json:"call_id"`
			ArgsHash string `json:"args_hash"`
		}
		out, _, _ := remote.run("", "sessions", "approvals", "--json", id)
		if err := json.Unmarshal([]byte(out), &list); err != nil || len(list) != 1 {
			t.Fatalf("waiting calls: %s", out)
		}
		return list[0].CallID, list[0].ArgsHash
	}
	call, hash := pending()
	if _, errOut, code := remote.run("", "sessions", "approve", "--for-session", id, call, hash); code != exitPaused {
		t.Fatalf("approve --for-session: %d %s", code, errOut)
	}
	out, errOut, code := remote.run("", "sessions", "revoke", "--json", id, hash)
	var st struct {
		ID, Status string
		ExitCode   int `json:"exit_code"`
		Allowed    map[string]json.RawMessage
	}
	decodeJSONLoose(t, "sessions revoke --server", out, &st)
	if code != exitPaused || st.ID != id || st.Status != "waiting" || st.ExitCode != exitPaused || len(st.Allowed) != 0 {
		t.Fatalf("revoke --json against a server: exit %d %+v\n%s", code, st, errOut)
	}
}

// keys revoke, db migrate and sessions recover take --json.
func TestKeysRevokeDBMigrateRecoverJSON(t *testing.T) {
	c := newCLI(t)
	out, errOut, code := c.run("", "keys", "create", "--db", c.db, "--tenant", "acme", "--role", "viewer", "--json")
	var key struct{ ID string }
	if json.Unmarshal([]byte(out), &key); code != 0 || key.ID == "" {
		t.Fatalf("keys create: %d %s %s", code, out, errOut)
	}
	out, errOut, code = c.run("", "keys", "revoke", "--db", c.db, "--json", key.ID)
	var revoked struct {
		ID      string
		Revoked bool
	}
	decodeJSON(t, "keys revoke", out, &revoked)
	if code != 0 || revoked.ID != key.ID || !revoked.Revoked {
		t.Fatalf("keys revoke --json: %d %+v %s", code, revoked, errOut)
	}
	if _, errOut, code := c.run("", "keys", "revoke", "--db", c.db, "--json", key.ID); code == 0 || !strings.Contains(errOut, "no key "+key.ID) {
		t.Fatalf("revoking it again: %d %s", code, errOut)
	}

	out, errOut, code = c.run("", "db", "migrate", "--db", c.db, "--json")
	var m struct {
		Engine, Database string
		Schema           int
	}
	decodeJSON(t, "db migrate", out, &m)
	if code != 0 || m.Engine != "sqlite" || m.Database != c.db || m.Schema < 1 {
		t.Fatalf("db migrate --json: %d %+v %s", code, m, errOut)
	}

	out, errOut, code = c.run("", "sessions", "recover", "--json")
	if code != 0 || strings.TrimSpace(out) != "[]" {
		t.Fatalf("sessions recover --json with nothing to recover: %d %q %s", code, out, errOut)
	}
}

// Without $HOME, $XDG_DATA_HOME and $AGENTLOOP_DB, the database is
// sessions.db in the working directory: the default's own name.
func TestDefaultDatabaseWithoutAHome(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(binary, "db", "migrate", "--json")
	cmd.Dir = dir
	for _, kv := range hermeticEnv(t) {
		if !strings.HasPrefix(kv, "HOME=") && !strings.HasPrefix(kv, "XDG_DATA_HOME=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	out, err := cmd.Output()
	var m struct{ Database string }
	if err != nil || json.Unmarshal(out, &m) != nil || m.Database != "sessions.db" {
		t.Fatalf("db migrate without a home: %v %s", err, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "sessions.db")); err != nil {
		t.Fatal(err)
	}
}

// decodeJSONLoose is decodeJSON for a session's state, of which a test
// reads a few fields: one JSON value and nothing else.
func decodeJSONLoose(t *testing.T, what, out string, v any) {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(out))
	if err := dec.Decode(v); err != nil {
		t.Fatalf("%s --json: %v:\n%.2000s", what, err, out)
	}
	if dec.More() {
		t.Fatalf("%s --json printed more than one value:\n%.2000s", what, out)
	}
}

// The commands printed for a waiting session run by a server name that
// server (it may have come from $AGENTLOOP_SERVER, which whoever runs them
// may not have set) and say they need $AGENTLOOP_KEY, never its value; the
// "Details:" command names the server or database too. Each works as
// printed.
func TestPrintedCommandsNameTheServerAndTheKey(t *testing.T) {
	c := newCLI(t)
	out, errOut, code := c.run("", "keys", "create", "--db", c.db, "--tenant", "acme", "--role", "operator", "--json")
	var key struct{ Secret string }
	if json.Unmarshal([]byte(out), &key); code != 0 || key.Secret == "" {
		t.Fatalf("keys create: %d %s", code, errOut)
	}
	s := c.serve("--auth", "keys", "--allow-script-models", "--workspaces", t.TempDir())
	script := writeScript(t, `{"steps":[{"tool_calls":[{"name":"write_file","arguments":{"path":"a.txt","content":"A"}}]},{"text":"wrote a"}]}`)
	withKey := &cli{t: t, db: c.db, env: []string{"AGENTLOOP_KEY=" + key.Secret, "AGENTLOOP_SERVER="}}
	_, errOut, code = withKey.run("", "run", "--server", s.url, "--model", "script:"+script, "write a")
	if code != exitPaused {
		t.Fatalf("run --server: %d %s", code, errOut)
	}
	approve := printedLine(t, errOut, "Approve:  ")
	if !strings.HasSuffix(approve, " --server "+s.url) || !strings.Contains(errOut, "(with AGENTLOOP_KEY set, as it is now)") {
		t.Fatalf("the printed approval lacks the server or the key's hint:\n%s", errOut)
	}
	if strings.Contains(errOut, key.Secret) {
		t.Fatalf("the key was printed:\n%s", errOut)
	}
	out, errOut = runPrinted(t, approve, withKey.env, exitCompleted)
	if !strings.Contains(out, "wrote a") {
		t.Fatalf("%s: %s\n%s", approve, out, errOut)
	}
	details := printedLine(t, errOut, "Details: ")
	if !strings.HasSuffix(details, " --server "+s.url) {
		t.Fatalf("the details command lacks the server: %s", details)
	}
	if out, _ := runPrinted(t, details, withKey.env, 0); !strings.Contains(out, "write a") {
		t.Fatalf("%s printed %s", details, out)
	}

	// Locally, the details command names the database.
	_, errOut, code = c.run("", "run", "--yes", "--model", "script:"+script, "--dir", t.TempDir(), "write a")
	if code != exitCompleted {
		t.Fatalf("run: %d %s", code, errOut)
	}
	details = printedLine(t, errOut, "Details: ")
	if !strings.HasSuffix(details, " --db "+c.db) {
		t.Fatalf("the details command lacks the database: %s", details)
	}
	if out, _ := runPrinted(t, details, nil, 0); !strings.Contains(out, "write a") {
		t.Fatalf("%s printed %s", details, out)
	}
}

// printedLine is the command printed after prefix on a line of stderr
// (for "Details:", after the last ". ").
func printedLine(t *testing.T, stderr, prefix string) string {
	t.Helper()
	i := strings.Index(stderr, prefix)
	if i < 0 {
		t.Fatalf("no %q line:\n%s", prefix, stderr)
	}
	line := strings.TrimSpace(strings.TrimPrefix(strings.SplitN(stderr[i:], "\n", 2)[0], prefix))
	if !strings.HasPrefix(line, "agentloop ") {
		t.Fatalf("%q is not a command", line)
	}
	return line
}

// runPrinted runs a printed command as a shell would split it (the paths
// here have no spaces), with env and nothing else of the test's, and wants
// its exit code.
func runPrinted(t *testing.T, line string, env []string, want int) (string, string) {
	t.Helper()
	cmd := exec.Command(binary, strings.Fields(line)[1:]...)
	cmd.Env = append(append(hermeticEnv(t), "AGENTLOOP_SERVER=", "AGENTLOOP_KEY="), env...)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	if code != want {
		t.Fatalf("%s: exit %d, want %d\n%s\n%s", line, code, want, out.String(), errb.String())
	}
	return out.String(), errb.String()
}

// parse-toolcalls always prints JSON; --json, as on every command that
// prints data, is accepted and changes nothing.
func TestParseToolCallsTakesJSON(t *testing.T) {
	c := newCLI(t)
	in := `<tool_call>{"name": "read_file", "arguments": {"path": "a.go"}}</tool_call>`
	plain, errOut, code := c.run(in, "parse-toolcalls", "--tools", "read_file")
	if code != 0 || !strings.Contains(plain, `"read_file"`) {
		t.Fatalf("parse-toolcalls: %d %s %s", code, plain, errOut)
	}
	withFlag, errOut, code := c.run(in, "parse-toolcalls", "--json", "--tools", "read_file")
	if code != 0 || withFlag != plain {
		t.Fatalf("parse-toolcalls --json: %d %q, without it %q\n%s", code, withFlag, plain, errOut)
	}
}
