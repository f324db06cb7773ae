package scripted

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/model"
)

const examplesDir = "../../examples/scripts"

func TestExampleScriptsLoad(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join(examplesDir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) < 3 {
		t.Fatalf("found %d example scripts in %s, want at least 3", len(paths), examplesDir)
	}
	for _, p := range paths {
		t.Run(filepath.Base(p), func(t *testing.T) {
			s, err := Load(p)
			if err != nil {
				t.Fatal(err)
			}
			if s.Description == "" {
				t.Error("example script has no description")
			}
		})
	}
}

// TestExampleScriptsPlay drives each example script through a minimal
// loop with stand-in tools, so the scripts' expectations, tool names and
// arguments stay consistent with each other and with the fix-test fixture.
// execute_command does not run go: it fakes `go test` output from the
// fixture's current source.
func TestExampleScriptsPlay(t *testing.T) {
	tests := []struct {
		script        string
		task          string
		untilComplete bool // keep going after text-only replies until TASK_COMPLETE
		wantFinal     string
	}{
		{"hello.json", "Say hello.", false, "Hello!"},
		{"self-reasoning.json", "What is 6 × 7? Finish with TASK_COMPLETE: <answer>.", true, "TASK_COMPLETE: 42"},
		{"fix-test.json", "Fix the failing test.", false, "All tests pass."},
	}
	for _, tt := range tests {
		t.Run(tt.script, func(t *testing.T) {
			s, err := Load(filepath.Join(examplesDir, tt.script))
			if err != nil {
				t.Fatal(err)
			}
			// Same script without its demo delays.
			fast := *s
			fast.Steps = append([]Step(nil), s.Steps...)
			for i := range fast.Steps {
				fast.Steps[i].Delay = 0
			}
			m := New(&fast)
			dir := copyFixture(t)
			tools := fixtureTools(t, dir)
			var specs []model.ToolSpec
			for _, name := range []string{"read_file", "write_file", "edit_file", "list_dir", "execute_command"} {
				specs = append(specs, model.ToolSpec{Name: name, Parameters: json.RawMessage(`{"type":"object"}`)})
			}
			msgs := []model.Message{
				{Role: model.RoleSystem, Content: "You are a coding agent."},
				{Role: model.RoleUser, Content: tt.task},
			}
			var final string
			for turn := 0; ; turn++ {
				if turn > 20 {
					t.Fatal("no final answer after 20 turns")
				}
				var streamed strings.Builder
				resp, err := m.Generate(t.Context(), &model.Request{Messages: msgs, Tools: specs}, func(d model.Delta) { streamed.WriteString(d.Text) })
				if err != nil {
					t.Fatalf("turn %d: %v", turn+1, err)
				}
				if streamed.String() != resp.Text {
					t.Errorf("turn %d: streamed %q, reply %q", turn+1, streamed.String(), resp.Text)
				}
				msgs = append(msgs, model.Message{Role: model.RoleAssistant, Content: resp.Text, ToolCalls: resp.ToolCalls})
				if len(resp.ToolCalls) == 0 {
					if !tt.untilComplete || strings.Contains(resp.Text, "TASK_COMPLETE") {
						final = resp.Text
						break
					}
					msgs = append(msgs, model.Message{Role: model.RoleUser, Content: "Continue."})
					continue
				}
				for _, tc := range resp.ToolCalls {
					run, ok := tools[tc.Name]
					if !ok {
						t.Fatalf("turn %d: script calls unknown tool %q", turn+1, tc.Name)
					}
					var args map[string]string
					if err := json.Unmarshal(tc.Arguments, &args); err != nil {
						t.Fatalf("turn %d: %s arguments %s: %v", turn+1, tc.Name, tc.Arguments, err)
					}
					out, isErr := run(args)
					if isErr {
						t.Errorf("turn %d: %s(%s) failed: %s", turn+1, tc.Name, tc.Arguments, out)
					}
					msgs = append(msgs, model.Message{Role: model.RoleTool, Content: out, ToolCallID: tc.ID, ToolName: tc.Name, IsError: isErr})
				}
			}
			if !strings.Contains(final, tt.wantFinal) {
				t.Errorf("final answer %q, want it to contain %q", final, tt.wantFinal)
			}
			if err := m.Err(); err != nil {
				t.Error(err)
			}
			if tt.script == "fix-test.json" {
				src, _ := os.ReadFile(filepath.Join(dir, "calc.go"))
				if !strings.Contains(string(src), "return a + b") {
					t.Errorf("calc.go not fixed:\n%s", src)
				}
			}
		})
	}
}

func copyFixture(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	src := filepath.Join(examplesDir, "fix-test")
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// fixtureTools returns stand-ins for the standard tools, working in dir.
func fixtureTools(t *testing.T, dir string) map[string]func(map[string]string) (string, bool) {
	read := func(path string) (string, bool) {
		data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(path)))
		if err != nil {
			return err.Error(), true
		}
		return string(data), false
	}
	return map[string]func(map[string]string) (string, bool){
		"read_file": func(a map[string]string) (string, bool) { return read(a["path"]) },
		"edit_file": func(a map[string]string) (string, bool) {
			src, isErr := read(a["path"])
			if isErr {
				return src, true
			}
			if n := strings.Count(src, a["old_text"]); n != 1 {
				return "old_text must occur exactly once in " + a["path"], true
			}
			src = strings.Replace(src, a["old_text"], a["new_text"], 1)
			if err := os.WriteFile(filepath.Join(dir, a["path"]), []byte(src), 0o644); err != nil {
				return err.Error(), true
			}
			return "edited " + a["path"], false
		},
		"execute_command": func(a map[string]string) (string, bool) {
			if a["command"] != "go test ./..." {
				t.Errorf("unexpected command %q", a["command"])
			}
			src, _ := read("calc.go")
			if strings.Contains(src, "return a + b") {
				return "ok  \texample.com/calc\t0.002s\n", false
			}
			// What go test prints for the fixture; the command exits 1.
			return "--- FAIL: TestAdd (0.00s)\n    calc_test.go:7: Add(2, 3) = -1, want 5\nFAIL\nFAIL\texample.com/calc\t0.002s\nFAIL\n\nexit status 1", false
		},
	}
}
