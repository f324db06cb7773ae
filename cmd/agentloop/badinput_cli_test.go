package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/store/sqlite"
)

// Tool calls no tool should take — NUL bytes in a path, a lone surrogate
// (invalid UTF-8 once decoded), 1,000-deep nesting, a 10 MB argument —
// and 100 MB of tool output: each gets a clear result the model can act
// on, the session goes on to its answer, and every event is stored and
// read back.
func TestBadToolInputGetsClearErrorsAndLosesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 100 MB")
	}
	ws := t.TempDir()
	deep := strings.Repeat("[", 1000) + strings.Repeat("]", 1000)
	big := strings.Repeat("y", 10<<20)
	call := func(name string, args string) string {
		return fmt.Sprintf(`{"tool_calls":[{"name":%q,"arguments":%s}]}`, name, args)
	}
	script := writeSteps(t,
		call("write_file", `{"path":"a\u0000b.txt","content":"x"}`),
		call("write_file", `{"path":"bad\udcff.txt","content":"\udcff"}`),
		call("write_file", `{"path":"deep.txt","content":"x","extra":`+deep+`}`),
		call("write_file", `{"path":"big.txt","content":"`+big+`"}`),
		call("execute_command", `{"command":"head -c 100000000 /dev/zero | tr '\\0' a; echo; echo end"}`),
		call("execute_command", `{"command":"head -c 100000000 /dev/zero | tr '\\0' b > huge.txt; echo made"}`),
		call("read_file", `{"path":"huge.txt"}`),
		`{"text":"done"}`)
	c := newCLI(t)
	_, errOut, code := c.run("", "run", "--yes", "--dir", ws, "--max-iterations", "12", "--no-progress", "0", "--model", "script:"+script, "stress the tools")
	if code != 0 {
		t.Fatalf("exit %d\n%.3000s", code, errOut)
	}
	out, _, _ := c.run("", "sessions", "list", "--json")
	id := between(out, `"id": "`, `"`)
	if _, errOut, code := c.run("", "sessions", "show", id); code != 0 {
		t.Fatalf("show: %d %s", code, errOut)
	}
	db, err := sqlite.Open(c.db)
	if err != nil {
		t.Fatal(err)
	}
	events, err := db.Load(t.Context(), id)
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	var results []*loop.ToolFinished
	for _, e := range events {
		if r, ok := e.Data.(*loop.ToolFinished); ok {
			results = append(results, r)
		}
	}
	if len(results) != 7 {
		t.Fatalf("%d tool results, want 7", len(results))
	}
	want := []struct {
		isError bool
		says    string
	}{
		{true, "NUL"},
		{false, ""}, // U+FFFD is a valid name character: the file is written as named
		{true, "extra"},
		{false, ""},
		{false, "end"},
		{false, "made"},
		{false, ""},
	}
	for i, w := range want {
		r := results[i]
		if r.IsError != w.isError || !strings.Contains(r.Output, w.says) {
			t.Errorf("call %d (%s): is_error %v, output %.300q; want is_error %v saying %q", i+1, r.Name, r.IsError, r.Output, w.isError, w.says)
		}
		if len(r.Output) > 256<<10 {
			t.Errorf("call %d (%s): %d bytes of output reached the log; tool output must be capped", i+1, r.Name, len(r.Output))
		}
	}
	if fi, err := os.Stat(filepath.Join(ws, "big.txt")); err != nil || fi.Size() != 10<<20 {
		t.Errorf("the 10 MB file: %v %v", fi, err)
	}
	if _, err := os.Stat(filepath.Join(ws, "a")); err == nil {
		t.Error("a path cut at its NUL byte was written")
	}
	if fi, err := os.Stat(c.db); err == nil && fi.Size() > 64<<20 {
		t.Errorf("the database grew to %d MB for one 10 MB argument", fi.Size()>>20)
	}
}

// Session ids that try to walk the file system are just ids nobody has:
// every command says so once, clearly, and touches nothing.
func TestSessionIDsWithTraversal(t *testing.T) {
	c := newCLI(t)
	if _, errOut, code := c.run("", "run", "--model", "script:"+writeSteps(t, `{"text":"hi"}`), "one session"); code != 0 {
		t.Fatalf("%d %s", code, errOut)
	}
	before, _ := os.ReadFile(c.db)
	for _, id := range []string{"../../etc/passwd", "/etc/passwd", "..", "a/../../b", "%2e%2e%2f"} {
		for _, cmd := range []string{"show", "resume", "delete", "pause", "terminate"} {
			args := []string{"sessions", cmd, id}
			if cmd == "terminate" {
				args = append(args, "failed")
			}
			_, errOut, code := c.run("", args...)
			if code == 0 || !strings.Contains(errOut, "not found") || strings.Count(errOut, id) > 1 {
				t.Errorf("sessions %s %q: exit %d, %q", cmd, id, code, errOut)
			}
		}
	}
	if after, _ := os.ReadFile(c.db); len(after) < len(before) {
		t.Fatal("the database shrank")
	}
	if out, _, _ := c.run("", "sessions", "list"); !strings.Contains(out, "one session") {
		t.Fatalf("the session is gone: %s", out)
	}
}
