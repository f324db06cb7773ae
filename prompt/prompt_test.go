package prompt

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/model"
	"github.com/agentloop/agentloop/model/tokens"
)

func spec(name, desc, params string) model.ToolSpec {
	return model.ToolSpec{Name: name, Description: desc, Parameters: json.RawMessage(params)}
}

// standardTools are plausible specs of the 14 standard tools.
func standardTools() []model.ToolSpec {
	return []model.ToolSpec{
		spec("read_file", "Read a text file, optionally a range of lines. Output is prefixed with line numbers.",
			`{"type":"object","properties":{"path":{"type":"string","description":"File path relative to the workspace."},"start_line":{"type":"integer"},"end_line":{"type":"integer"}},"required":["path"]}`),
		spec("write_file", "Create or overwrite a file with the given content.",
			`{"type":"object","properties":{"path":{"type":"string"},"content":{"type":"string"}},"required":["path","content"]}`),
		spec("edit_file", "Replace an exact, unique snippet of text in a file with new text. Fails if old_text is missing or ambiguous.",
			`{"type":"object","properties":{"path":{"type":"string"},"old_text":{"type":"string"},"new_text":{"type":"string"},"replace_all":{"type":"boolean"}},"required":["path","old_text","new_text"]}`),
		spec("list_dir", "List the entries of a directory.",
			`{"type":"object","properties":{"path":{"type":"string"},"depth":{"type":"integer","minimum":1,"maximum":5}},"required":["path"]}`),
		spec("search", "Search file contents for a regular expression and return matching lines with file and line number.",
			`{"type":"object","properties":{"pattern":{"type":"string"},"path":{"type":"string"},"glob":{"type":"string"},"max_results":{"type":"integer"}},"required":["pattern"]}`),
		spec("execute_command", "Run a shell command in the workspace and return its exit code, stdout and stderr.",
			`{"type":"object","properties":{"command":{"type":"string"},"timeout_seconds":{"type":"integer"}},"required":["command"]}`),
		spec("git_status", "Show the working tree status.", `{"type":"object","properties":{}}`),
		spec("git_log", "Show recent commits.",
			`{"type":"object","properties":{"max_count":{"type":"integer"},"path":{"type":"string"}}}`),
		spec("git_diff", "Show changes in the working tree, or against a revision.",
			`{"type":"object","properties":{"revision":{"type":"string"},"path":{"type":"string"},"staged":{"type":"boolean"}}}`),
		spec("update_plan", "Record or update your step-by-step plan.",
			`{"type":"object","properties":{"steps":{"type":"array","items":{"type":"object","properties":{"title":{"type":"string"},"status":{"type":"string","enum":["pending","in_progress","done"]}}}}},"required":["steps"]}`),
		spec("remember", "Store a fact under a key for later in this session.",
			`{"type":"object","properties":{"key":{"type":"string"},"value":{"type":"string"}},"required":["key","value"]}`),
		spec("recall", "Retrieve facts stored with remember.",
			`{"type":"object","properties":{"key":{"type":"string"}}}`),
		spec("ask_user", "Ask the user a question and wait for the answer.",
			`{"type":"object","properties":{"question":{"type":"string"}},"required":["question"]}`),
		spec("final_answer", "Finish the task with your final answer.",
			`{"type":"object","properties":{"answer":{"type":"string"}},"required":["answer"]}`),
	}
}

func standardData(mode Mode) Data {
	return Data{
		Mode:  mode,
		Tools: standardTools(),
		Workspace: WorkspaceInfo{
			Root: "/home/dev/src/agentloop", Repository: "agentloop/agentloop", Branch: "main",
			Files: []string{"loop/runner.go", "loop/state.go"},
		},
		MaxIterations: 20,
		Instructions:  "Run go vet before you finish.",
	}
}

func TestDefaultPromptUnder2000Tokens(t *testing.T) {
	for _, mode := range []Mode{ModeTools, ModeSelfReasoning, ModeSingleShot} {
		t.Run(string(mode), func(t *testing.T) {
			s, err := Build(standardData(mode))
			if err != nil {
				t.Fatal(err)
			}
			n := tokens.Count(tokens.CL100K, s)
			t.Logf("%s prompt with %d tools: %d cl100k tokens, %d bytes", mode, len(standardTools()), n, len(s))
			if n >= 2000 {
				t.Errorf("%s prompt is %d tokens, want < 2000", mode, n)
			}
			if testing.Verbose() && mode == ModeTools {
				t.Log("\n" + s)
			}
		})
	}
}

func TestBuildContent(t *testing.T) {
	tests := []struct {
		name    string
		data    Data
		want    []string
		notWant []string
	}{
		{
			name: "tools mode",
			data: standardData(ModeTools),
			want: []string{
				"You are agentloop",
				"- read_file(path, start_line?: integer, end_line?: integer): Read a text file, optionally a range of lines.",
				"- edit_file(path, old_text, new_text, replace_all?: boolean)",
				"- update_plan(steps: []object)",
				"- git_status(): Show the working tree status.",
				"tool-calling interface",
				"1. Understand", "4. Verify", "5. Finish",
				"reply with your final answer and no tool call (or call final_answer)",
				"record them with update_plan",
				"Use ask_user only",
				"# Examples (shorthand", `search "func Add"`, "edit_file calc/add.go", `execute_command "go test ./calc"`,
				"Directory: /home/dev/src/agentloop",
				"Repository: agentloop/agentloop, branch main",
				"Files named in the task: loop/runner.go, loop/state.go",
				"# Additional instructions\nRun go vet before you finish.",
				"You have at most 20 steps.",
			},
			notWant: []string{DefaultMarker, "\n\n\n", " \n"},
		},
		{
			name: "tools mode without the example tools",
			data: Data{Tools: []model.ToolSpec{spec("lookup", "Look up a word.", `{"type":"object","properties":{"word":{"type":"string"}},"required":["word"]}`)}},
			want: []string{"- lookup(word): Look up a word.", "5. Finish", "reply with your final answer and no tool call:"},
			notWant: []string{"# Examples", "final_answer", "update_plan", "ask_user", "# Workspace",
				"# Additional instructions", "at most"},
		},
		{
			name:    "edit example without search or run tools",
			data:    Data{Tools: []model.ToolSpec{spec("read_file", "", `{}`), spec("write_file", "", `{}`)}},
			want:    []string{"# Examples", "1. read_file calc/add.go", "2. write_file calc/add.go"},
			notWant: []string{"go test", "MaxRetries"},
		},
		{
			name: "self-reasoning",
			data: Data{Mode: ModeSelfReasoning, Marker: "DONE:", MaxIterations: 5},
			want: []string{"reasoning step by step", "at most 5 turns", "DONE: <your final answer>",
				"Building on that", "DONE: March 2025 has 21 weekdays."},
			notWant: []string{"# Tools", DefaultMarker, "tool-calling"},
		},
		{
			name: "self-reasoning default marker and tools",
			data: Data{Mode: ModeSelfReasoning, Tools: standardTools()[:1]},
			want: []string{"TASK_COMPLETE: <your final answer>", "# Tools\n- read_file(", "Call a tool only when"},
		},
		{
			name:    "single shot ignores tools",
			data:    Data{Mode: ModeSingleShot, Tools: standardTools()},
			want:    []string{"in this one reply", "cannot run tools"},
			notWant: []string{"# Tools", "read_file", "# Examples"},
		},
		{
			name: "detached head",
			data: Data{Workspace: WorkspaceInfo{Repository: "r", Commit: "0123456789ab"}},
			want: []string{"Repository: r, detached at 0123456789ab"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Build(tt.data)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tt.want {
				if !strings.Contains(s, w) {
					t.Errorf("prompt lacks %q:\n%s", w, s)
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(s, w) {
					t.Errorf("prompt contains %q:\n%s", w, s)
				}
			}
		})
	}
}

func TestBuildErrors(t *testing.T) {
	tests := []struct {
		name string
		data Data
		want string
	}{
		{"unknown mode", Data{Mode: "chatty"}, `unknown mode "chatty"`},
		{"nameless tool", Data{Tools: []model.ToolSpec{{Description: "Does things."}}}, "a tool has no name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Build(tt.data)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Build error = %v, want one containing %q", err, tt.want)
			}
		})
	}
	if _, err := Build(Data{}, Options{}, Options{}); err == nil {
		t.Error("Build with two Options succeeded, want an error")
	}
}

func TestArgSummary(t *testing.T) {
	tests := []struct {
		schema, want string
	}{
		{``, ""},
		{`not json`, ""},
		{`{"type":"object"}`, ""},
		{`{"type":"object","properties":{"b":{"type":"string"},"a":{"type":"integer"}},"required":["a"]}`, "a: integer, b?"},
		{`{"properties":{"mode":{"enum":["fast","slow"]}},"required":["mode"]}`, `mode: "fast"|"slow"`},
		{`{"properties":{"n":{"type":["integer","null"]}}}`, "n?: integer"},
		{`{"properties":{"tags":{"type":"array","items":{"type":"string"}}}}`, "tags?: []string"},
		{`{"properties":{"x":{}}}`, "x?"},
	}
	for _, tt := range tests {
		if got := argSummary(json.RawMessage(tt.schema)); got != tt.want {
			t.Errorf("argSummary(%s) = %q, want %q", tt.schema, got, tt.want)
		}
	}
}

func TestFirstSentence(t *testing.T) {
	tests := []struct{ in, want string }{
		{"Read a file. Then more.", "Read a file."},
		{"  Line one\nline two", "Line one"},
		{"v1.2 is fine", "v1.2 is fine"},
		{"Read a file, e.g. main.go. Then stop.", "Read a file, e.g. main.go."},
		{"Ends here. lowercase continues", "Ends here. lowercase continues"},
		{strings.Repeat("x", 300), strings.Repeat("x", maxDescription-1) + "…"},
	}
	for _, tt := range tests {
		if got := firstSentence(tt.in); got != tt.want {
			t.Errorf("firstSentence(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
