package server_test

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentloop/agentloop/assemble"
	"github.com/agentloop/agentloop/checkpoint"
	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/model/price"
	"github.com/agentloop/agentloop/server"
	"github.com/agentloop/agentloop/service"
	"github.com/agentloop/agentloop/store/sqlite"
)

// newRewindAPI serves the API over loopback with workspace checkpoints on
// (withCheckpoints false: off).
func newRewindAPI(t *testing.T, withCheckpoints bool) *api {
	t.Helper()
	dir := t.TempDir()
	st, err := sqlite.Open(filepath.Join(dir, "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	resolver := &assemble.Resolver{}
	cfg := service.Config{Store: st, Runner: resolver.RunnerConfig(st, price.Default())}
	if withCheckpoints {
		cs := &checkpoint.Store{Root: filepath.Join(dir, "checkpoints")}
		cfg.Checkpoints, cfg.Runner.Checkpoint = cs, cs.Hook(nil)
	}
	svc, err := service.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close() })
	ws := filepath.Join(dir, "ws")
	os.MkdirAll(ws, 0o700)
	h := server.New(server.Config{Service: svc, Keys: st, Heartbeat: 50 * time.Millisecond,
		Defaults: server.Defaults{Approval: "auto", Workspaces: ws, AllowScripts: true, Model: "script:" + script(t, dir, "hello")}})
	t.Cleanup(h.Observe(st))
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return &api{t: t, url: srv.URL, st: st, dir: dir, keys: map[string]string{}}
}

// writesScript is a scripted model that writes each file in turn, one
// step each (an empty content deletes nothing: it writes an empty file),
// then answers.
func writesScript(t *testing.T, dir string, files ...[2]string) string {
	t.Helper()
	var steps []string
	for _, f := range files {
		args, _ := json.Marshal(map[string]string{"path": f[0], "content": f[1]})
		steps = append(steps, fmt.Sprintf(`{"tool_calls":[{"name":"write_file","arguments":%s}]}`, args))
	}
	steps = append(steps, `{"text":"done"}`, `{"text":"done again"}`)
	path := filepath.Join(dir, fmt.Sprintf("writes-%d.json", time.Now().UnixNano()))
	if err := os.WriteFile(path, []byte(`{"steps":[`+strings.Join(steps, ",")+`]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

type rewoundBody struct {
	SessionID    string `json:"session_id"`
	At           int    `json:"at"`
	Files        []struct{ Path, Change string }
	RewoundSteps []int `json:"rewound_steps"`
	Resumed      bool
}

// POST /v1/sessions/{id}/rewind: a dry run lists the files and changes
// nothing; the rewind restores them, marks the later steps rewound in the
// state and resumes the session when given a message.
func TestRewindOverHTTP(t *testing.T) {
	a := newRewindAPI(t, true)
	s := writesScript(t, a.dir, [2]string{"a.txt", "one"}, [2]string{"b.txt", "two"}, [2]string{"a.txt", "three"})
	ws := filepath.Join(a.dir, "ws", "rw")
	id := a.create("", fmt.Sprintf(`{"task":"write","model":"script:%s","workspace":%q}`, s, ws))
	a.waitStatus("", id, "completed")

	code, out, hdr := a.do("POST", "/v1/sessions/"+id+"/rewind", "", `{"at":1,"dry_run":true}`)
	if code != 200 || hdr.Get("Content-Type") != "application/json" {
		t.Fatalf("dry run: %d %s", code, out)
	}
	var dry rewoundBody
	json.Unmarshal([]byte(out), &dry)
	if dry.SessionID != id || dry.At != 1 || dry.Resumed || fmt.Sprint(dry.RewoundSteps) != "[2 3 4]" ||
		fmt.Sprint(dry.Files) != "[{a.txt modified} {b.txt deleted}]" {
		t.Fatalf("dry run: %s", out)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "a.txt")); string(b) != "three" {
		t.Fatalf("a dry run changed a.txt to %q", b)
	}

	// Ended, without a message: it waits, paused, with step 1's files.
	code, out, _ = a.do("POST", "/v1/sessions/"+id+"/rewind", "", `{"at":1}`)
	if code != 200 || !strings.Contains(out, `"resumed":false`) {
		t.Fatalf("rewind: %d %s", code, out)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "a.txt")); string(b) != "one" {
		t.Fatalf("a.txt after the rewind: %q", b)
	}
	if _, err := os.Stat(filepath.Join(ws, "b.txt")); !os.IsNotExist(err) {
		t.Fatalf("b.txt after the rewind: %v", err)
	}
	_, out, _ = a.do("GET", "/v1/sessions/"+id, "", "")
	var st struct {
		Status     string `json:"status"`
		Reason     string `json:"reason"`
		Iterations []struct {
			Number  int  `json:"number"`
			Rewound bool `json:"rewound"`
		} `json:"iterations"`
		Rewinds []struct {
			ToIteration int   `json:"to_iteration"`
			Steps       []int `json:"steps"`
		} `json:"rewinds"`
	}
	json.Unmarshal([]byte(out), &st)
	var marks []string
	for _, it := range st.Iterations {
		marks = append(marks, fmt.Sprintf("%d:%v", it.Number, it.Rewound))
	}
	if st.Status != "paused" || st.Reason != "rewound" || strings.Join(marks, " ") != "1:false 2:true 3:true 4:true" ||
		len(st.Rewinds) != 1 || fmt.Sprint(st.Rewinds[0].Steps) != "[2 3 4]" {
		t.Fatalf("after the rewind: %s (%s), iterations %v, rewinds %+v", st.Status, st.Reason, marks, st.Rewinds)
	}
	if code, out, _ := a.do("POST", "/v1/sessions/"+id+"/resume", "", ``); code != 202 {
		t.Fatalf("resume: %d %s", code, out)
	}
	a.waitStatus("", id, "completed")

	// With a message the session runs again (the script's next reply).
	code, out, _ = a.do("POST", "/v1/sessions/"+id+"/rewind", "", `{"at":4,"message":"say it again"}`)
	if code != 200 || !strings.Contains(out, `"resumed":true`) || !strings.Contains(out, `"rewound_steps":[]`) || !strings.Contains(out, `"files":[]`) {
		t.Fatalf("rewind with a message: %d %s", code, out)
	}
	a.waitStatus("", id, "completed")
	if _, out, _ := a.do("GET", "/v1/sessions/"+id, "", ""); !strings.Contains(out, `"answer":"done again"`) {
		t.Fatalf("after the rewind with a message: %.400s", out)
	}
	_, ev, _ := a.do("GET", "/v1/sessions/"+id+"/events?limit=1000", "", "")
	if !strings.Contains(ev, `"type":"session.rewound"`) || !strings.Contains(ev, `"to_iteration":1`) {
		t.Fatalf("no session.rewound in the log: %.300s", ev)
	}
}

func TestRewindProblems(t *testing.T) {
	a := newRewindAPI(t, true)
	s := writesScript(t, a.dir, [2]string{"a.txt", "one"})
	id := a.create("", fmt.Sprintf(`{"task":"write","model":"script:%s","workspace":%q}`, s, filepath.Join(a.dir, "ws", "p")))
	a.waitStatus("", id, "completed")
	busy := script(t, a.dir, "done", "10m")
	running := a.create("", fmt.Sprintf(`{"task":"wait","model":"script:%s","workspace":%q}`, busy, filepath.Join(a.dir, "ws", "q")))
	a.waitStatus("", running, "running")
	for _, c := range []struct {
		name, id, body string
		code           int
		says           string
	}{
		{"no body", id, ``, 400, "empty"},
		{"no step", id, `{}`, 400, "from 1"},
		{"step 0", id, `{"at":0}`, 400, "from 1"},
		{"a step it never reached", id, `{"at":7}`, 400, "no finished step 7"},
		{"a string step", id, `{"at":"1"}`, 400, "at"},
		{"an unknown field", id, `{"at":1,"to":2}`, 400, "unknown field"},
		{"an unknown session", "nope", `{"at":1}`, 404, "not found"},
		{"a running session", running, `{"at":1}`, 409, "pause it"},
		{"a running session, dry", running, `{"at":1,"dry_run":true}`, 409, "pause it"},
	} {
		code, out, hdr := a.do("POST", "/v1/sessions/"+c.id+"/rewind", "", c.body)
		if code != c.code || !strings.Contains(out, c.says) || !strings.HasPrefix(hdr.Get("Content-Type"), "application/problem+json") {
			t.Errorf("%s: %d %s (%s), want %d saying %q", c.name, code, out, hdr.Get("Content-Type"), c.code, c.says)
		}
	}
	a.do("POST", "/v1/sessions/"+running+"/terminate", "", `{}`)

	off := newRewindAPI(t, false)
	s = writesScript(t, off.dir, [2]string{"a.txt", "one"})
	id = off.create("", fmt.Sprintf(`{"task":"write","model":"script:%s","workspace":%q}`, s, filepath.Join(off.dir, "ws", "p")))
	off.waitStatus("", id, "completed")
	if code, out, _ := off.do("POST", "/v1/sessions/"+id+"/rewind", "", `{"at":1,"dry_run":true}`); code != 400 || !strings.Contains(out, "keeps no workspace checkpoints") {
		t.Errorf("a server without checkpoints: %d %s", code, out)
	}
}

// Every event type a log can hold has a schema in the OpenAPI document's
// Event (its discriminator), and the document names no other.
func TestOpenAPIDocumentsEveryEventType(t *testing.T) {
	raw, err := os.ReadFile("openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Components struct {
			Schemas struct {
				Event struct {
					OneOf         []map[string]string `json:"oneOf"`
					Discriminator struct {
						Mapping map[string]string `json:"mapping"`
					} `json:"discriminator"`
				} `json:"Event"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	ev := doc.Components.Schemas.Event
	documented := map[string]bool{}
	for typ := range ev.Discriminator.Mapping {
		documented[typ] = true
	}
	for _, typ := range loop.EventTypes() {
		if !documented[string(typ)] {
			t.Errorf("event type %s has no schema in openapi.json's Event", typ)
		}
		delete(documented, string(typ))
	}
	for typ := range documented {
		t.Errorf("openapi.json documents event type %s, which no log holds", typ)
	}
	if len(ev.OneOf) != len(ev.Discriminator.Mapping) {
		t.Errorf("Event has %d schemas in oneOf but %d in its discriminator", len(ev.OneOf), len(ev.Discriminator.Mapping))
	}
}
