package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// A model that writes its calls as text in GLM-4.5's and Kimi K2's formats
// gets them run: the files appear in the workspace.
func TestTextToolCallsOfOpenWeightFamiliesRun(t *testing.T) {
	c := newCLI(t)
	ws := t.TempDir()
	glm := "<tool_call>write_file\n<arg_key>path</arg_key>\n<arg_value>glm.txt</arg_value>\n<arg_key>content</arg_key>\n<arg_value>from GLM</arg_value>\n</tool_call>"
	kimi := `Writing the second file.<|tool_calls_section_begin|><|tool_call_begin|>functions.write_file:0<|tool_call_argument_begin|>{"path": "kimi.txt", "content": "from Kimi"}<|tool_call_end|><|tool_calls_section_end|>`
	step := func(text string) string {
		b, _ := json.Marshal(map[string]string{"text": text})
		return string(b)
	}
	script := writeScript(t, `{"steps":[`+step(glm)+`,`+step(kimi)+`,{"text":"Both files are written."}]}`)
	out, errOut, code := c.run("", "run", "--yes", "--model", "script:"+script, "--dir", ws, "write two files")
	if code != exitCompleted {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	for name, want := range map[string]string{"glm.txt": "from GLM", "kimi.txt": "from Kimi"} {
		got, err := os.ReadFile(filepath.Join(ws, name))
		if err != nil || string(got) != want {
			t.Errorf("%s = %q (%v), want %q", name, got, err, want)
		}
	}
}

func TestParseToolCallsCommandNamesNewFamilies(t *testing.T) {
	c := newCLI(t)
	for in, format := range map[string]string{
		">>>all\nChecking.\n>>>read_file\n{\"path\": \"a.go\"}":                                    "functionary_v32",
		"<|tool_call|>[{\"name\": \"read_file\", \"arguments\": {\"path\": \"a.go\"}}]":            "granite",
		"<tool_call>read_file\n<arg_key>path</arg_key>\n<arg_value>a.go</arg_value>\n</tool_call>": "glm45",
	} {
		out, _, code := c.run(in, "parse-toolcalls", "--tools", "read_file")
		var got struct {
			Calls []struct {
				Name      string
				Arguments map[string]any
			}
			Format string
		}
		if code != 0 || json.Unmarshal([]byte(out), &got) != nil || len(got.Calls) != 1 || got.Calls[0].Arguments["path"] != "a.go" || got.Format != format {
			t.Errorf("%q: %d %q, want one read_file call, format %s", in, code, out, format)
		}
	}
}
