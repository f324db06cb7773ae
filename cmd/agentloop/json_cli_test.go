package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/sandbox"
)

// decodeJSON decodes a command's whole stdout into v, failing the test
// on anything else (a second value, text around it).
func decodeJSON(t *testing.T, what, out string, v any) {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("%s --json: %v:\n%s", what, err, out)
	}
	if dec.More() {
		t.Fatalf("%s --json printed more than one value:\n%s", what, out)
	}
}

// keys create and keys list print JSON: the secret once from create, never
// a hash; an empty list is [] rather than a message.
func TestKeysJSON(t *testing.T) {
	c := newCLI(t)
	out, errOut, code := c.run("", "keys", "list", "--db", c.db, "--json")
	if code != 0 || strings.TrimSpace(out) != "[]" {
		t.Fatalf("keys list --json with no keys: %d %q %s", code, out, errOut)
	}
	out, errOut, code = c.run("", "keys", "create", "--db", c.db, "--tenant", "acme", "--role", "viewer", "--name", "ci", "--json")
	if code != 0 {
		t.Fatalf("keys create --json: %d %s", code, errOut)
	}
	var created struct {
		ID, Tenant, Role, Name, Secret string
		CreatedAt                      string `json:"created_at"`
	}
	decodeJSON(t, "keys create", out, &created)
	if !strings.HasPrefix(created.Secret, "al_") || created.Tenant != "acme" || created.Role != "viewer" || created.Name != "ci" || created.CreatedAt == "" {
		t.Fatalf("keys create --json: %+v", created)
	}
	out, _, code = c.run("", "keys", "list", "--json", "--db", c.db)
	var list []struct {
		ID, Tenant, Role, Name string
		CreatedAt              string `json:"created_at"`
	}
	decodeJSON(t, "keys list", out, &list)
	if code != 0 || len(list) != 1 || list[0].ID != created.ID || list[0].Tenant != "acme" {
		t.Fatalf("keys list --json: %d %+v", code, list)
	}
	if strings.Contains(out, created.Secret) || strings.Contains(out, "hash") {
		t.Fatalf("keys list --json shows a secret or a hash:\n%s", out)
	}
}

// version --json: the version, the Go version and platform of the build;
// the text form is the same information on one line.
func TestVersionJSON(t *testing.T) {
	c := newCLI(t)
	out, errOut, code := c.run("", "version", "--json")
	var v struct {
		Version, Revision, Time, Go, Platform string
		Modified                              bool
	}
	decodeJSON(t, "version", out, &v)
	if code != 0 || v.Version == "" || v.Go != runtime.Version() || v.Platform != runtime.GOOS+"/"+runtime.GOARCH {
		t.Fatalf("version --json: %d %+v %s", code, v, errOut)
	}
	line, _, _ := c.run("", "version")
	if !strings.HasPrefix(line, "agentloop "+v.Version+" (") || !strings.Contains(line, v.Go) || (v.Revision != "" && !strings.Contains(line, v.Revision[:12])) {
		t.Fatalf("version %q does not say what --json says: %+v", line, v)
	}
	if again, _, _ := c.run("", "--version", "--json"); again != out {
		t.Fatalf("--version --json %q, version --json %q", again, out)
	}
	if _, errOut, code := c.run("", "version", "extra"); code != exitUsage || !strings.Contains(errOut, "usage") {
		t.Fatalf("version extra: %d %s", code, errOut)
	}
}

// prompt --json: the prompt text as prompt prints it, with the tool count
// and token counts --tokens prints.
func TestPromptJSON(t *testing.T) {
	c := newCLI(t)
	dir := t.TempDir()
	text, _, _ := c.run("", "prompt", "--dir", dir, "fix the tests")
	out, errOut, code := c.run("", "prompt", "--dir", dir, "--json", "fix the tests")
	var p struct {
		Prompt string
		Tools  int
		Tokens map[string]int
	}
	decodeJSON(t, "prompt", out, &p)
	if code != 0 || p.Prompt+"\n" != text || p.Tools == 0 || p.Tokens["cl100k_base"] == 0 || p.Tokens["o200k_base"] == 0 {
		t.Fatalf("prompt --json: %d %s\n%.300s", code, errOut, out)
	}
}

// doctor --json reports the same backends as the text, and exits as the
// text form does.
func TestDoctorJSON(t *testing.T) {
	c := newCLI(t)
	out, errOut, code := c.run("", "doctor", "--json")
	var r struct {
		Backends []struct {
			Name        string
			Works       bool
			Error       string
			LandlockABI int `json:"landlock_abi"`
			Unconfined  bool
		}
		Default      string
		DefaultError string `json:"default_error"`
	}
	decodeJSON(t, "doctor", out, &r)
	text, _, textCode := c.run("", "doctor")
	if code != textCode {
		t.Fatalf("doctor exits %d, doctor --json %d: %s", textCode, code, errOut)
	}
	if r.Default != string(sandbox.DefaultBackend()) || (r.DefaultError == "") != (code == 0) {
		t.Fatalf("doctor --json default: %+v exit %d", r, code)
	}
	var names []string
	for _, b := range r.Backends {
		names = append(names, b.Name)
		works := sandbox.Probe(sandbox.Backend(b.Name), sandbox.NoNetwork) == nil
		if b.Works != works || (b.Error == "") != works || !strings.Contains(text, "  "+b.Name+" ") {
			t.Errorf("doctor --json backend %+v; the probe says works=%v; text:\n%s", b, works, text)
		}
	}
	if strings.Join(names, ",") != "landlock,bwrap,none" {
		t.Fatalf("doctor --json backends %v", names)
	}
}

// config check --json: no file is no problems; a broken file lists each
// problem with its line and exits 1; config path --json says where.
func TestConfigJSON(t *testing.T) {
	c := newCLI(t)
	type result struct {
		Path     string
		Exists   bool
		Problems []struct {
			File    string
			Line    int
			Column  int
			Message string
		}
	}
	var r result
	out, errOut, code := c.run("", "config", "check", "--json")
	decodeJSON(t, "config check", out, &r)
	if code != 0 || r.Exists || r.Problems == nil || len(r.Problems) != 0 || r.Path == "" {
		t.Fatalf("config check --json without a file: %d %+v %s", code, r, errOut)
	}
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	os.WriteFile(bad, []byte("db: x.db\nnonsense_key: 1\n"), 0o600)
	out, errOut, code = c.run("", "config", "check", "--json", bad)
	r = result{}
	decodeJSON(t, "config check", out, &r)
	if code != exitFailed || !r.Exists || r.Path != bad || len(r.Problems) != 1 || r.Problems[0].Line != 2 || !strings.Contains(r.Problems[0].Message, "nonsense_key") {
		t.Fatalf("config check --json on a bad file: %d %+v %s", code, r, errOut)
	}
	out, _, code = c.run("", "config", "path", "--json")
	var p result
	decodeJSON(t, "config path", out, &p)
	// Each run here has its own XDG_CONFIG_HOME, so only the file's place in it is the same.
	if code != 0 || p.Exists || !strings.HasSuffix(p.Path, "/agentloop/config.yaml") {
		t.Fatalf("config path --json: %d %+v", code, p)
	}
}

// sessions approvals --json lists the waiting calls, locally and against
// a server, with what approve needs; the listed call approves; nothing
// waiting is [].
func TestApprovalsJSON(t *testing.T) {
	script := writeScript(t, `{"steps":[
		{"tool_calls":[{"name":"write_file","arguments":{"path":"a.txt","content":"A"}}]},
		{"text":"wrote a"}]}`)
	type waiting struct {
		SessionID string `json:"session_id"`
		CallID    string `json:"call_id"`
		Name      string
		Input     json.RawMessage
		ArgsHash  string `json:"args_hash"`
	}
	c := newCLI(t)
	out, _, code := c.run("", "sessions", "approvals", "--json")
	if code != 0 || strings.TrimSpace(out) != "[]" {
		t.Fatalf("approvals --json with none waiting: %d %q", code, out)
	}
	ws := t.TempDir()
	if _, errOut, code := c.run("", "run", "--model", "script:"+script, "--dir", ws, "write a"); code != exitPaused {
		t.Fatalf("run: %d %s", code, errOut)
	}
	id := sessionID(t, c)
	var list []waiting
	out, _, _ = c.run("", "sessions", "approvals", "--json")
	decodeJSON(t, "sessions approvals", out, &list)
	if len(list) != 1 || list[0].SessionID != id || list[0].Name != "write_file" || !strings.Contains(string(list[0].Input), `"a.txt"`) || list[0].ArgsHash == "" {
		t.Fatalf("approvals --json: %+v", list)
	}

	// The same list from a server that reads the same database.
	s := c.serve("--workspaces", t.TempDir())
	remote := &cli{t: t, db: c.db, env: []string{"AGENTLOOP_SERVER=" + s.url}}
	var fromServer []waiting
	out, errOut, _ := remote.run("", "sessions", "approvals", "--json")
	decodeJSON(t, "sessions approvals --server", out, &fromServer)
	if len(fromServer) != 1 || fromServer[0].CallID != list[0].CallID || fromServer[0].ArgsHash != list[0].ArgsHash {
		t.Fatalf("approvals --json against the server: %+v %s", fromServer, errOut)
	}
	if _, errOut, code := remote.run("", "sessions", "approve", id, list[0].CallID, list[0].ArgsHash); code != exitCompleted {
		t.Fatalf("approving the listed call: %d %s", code, errOut)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "a.txt")); string(b) != "A" {
		t.Fatalf("a.txt = %q", b)
	}
}

// The controls that carry a session on (approve, deny, reply, resume)
// take --json: stdout is the state once it stops, as run --json prints
// it, locally and against a server.
func TestControlsJSON(t *testing.T) {
	script := writeScript(t, `{"steps":[
		{"tool_calls":[{"name":"write_file","arguments":{"path":"a.txt","content":"A"}}]},
		{"tool_calls":[{"name":"write_file","arguments":{"path":"b.txt","content":"B"}}]},
		{"text":"wrote both"}]}`)
	c := newCLI(t)
	if _, errOut, code := c.run("", "run", "--model", "script:"+script, "--dir", t.TempDir(), "write"); code != exitPaused {
		t.Fatalf("run: %d %s", code, errOut)
	}
	id := sessionID(t, c)
	pending := func(c *cli) (string, string) {
		var list []struct {
			CallID   string `json:"call_id"`
			ArgsHash string `json:"args_hash"`
		}
		out, _, _ := c.run("", "sessions", "approvals", "--json", id)
		if err := json.Unmarshal([]byte(out), &list); err != nil || len(list) != 1 {
			t.Fatalf("waiting calls: %s", out)
		}
		return list[0].CallID, list[0].ArgsHash
	}
	type state struct {
		ID       string
		Status   string
		ExitCode int `json:"exit_code"`
	}
	call, hash := pending(c)
	out, errOut, code := c.run("", "sessions", "approve", "--json", id, call, hash)
	var st state
	if err := json.Unmarshal([]byte(out), &st); err != nil || code != exitPaused || st.ID != id || st.Status != "waiting" || st.ExitCode != exitPaused {
		t.Fatalf("approve --json: %d %+v %v\n%.500s\n%s", code, st, err, out, errOut)
	}

	// The second call, approved through a server reading the same database.
	s := c.serve("--workspaces", t.TempDir())
	remote := &cli{t: t, db: c.db, env: []string{"AGENTLOOP_SERVER=" + s.url}}
	call, hash = pending(remote)
	out, errOut, code = remote.run("", "sessions", "approve", "--json", id, call, hash)
	st = state{}
	if err := json.Unmarshal([]byte(out), &st); err != nil || code != exitCompleted || st.Status != "completed" || st.ExitCode != 0 {
		t.Fatalf("approve --json against a server: %d %+v %v\n%.500s\n%s", code, st, err, out, errOut)
	}
}
