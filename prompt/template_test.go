package prompt

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestTemplateOverrides(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		file  string // TemplatePath is this file in the dir, or the dir when ""
		mode  Mode
		want  []string
		// notWant must not appear in the tools-mode prompt.
		notWant []string
	}{
		{
			name:  "system.tmpl replaces the tools prompt only",
			files: map[string]string{"system.tmpl": "Custom agent with {{len .Tools}} tools.{{template \"workspace\" .}}"},
			mode:  ModeTools,
			want:  []string{"Custom agent with 14 tools.", "Repository: agentloop/agentloop"},
		},
		{
			name:  "self-reasoning keeps the default when only system.tmpl is overridden",
			files: map[string]string{"system.tmpl": "Custom."},
			mode:  ModeSelfReasoning,
			want:  []string{"reasoning step by step"},
		},
		{
			name:    "a define overrides one partial",
			files:   map[string]string{"partials.tmpl": `{{define "workspace"}}WS={{.Workspace.Root}}{{end}}`},
			mode:    ModeTools,
			want:    []string{"WS=/home/dev/src/agentloop", "# How to work"},
			notWant: []string{"# Workspace"},
		},
		{
			name:  "a single file with another name is the prompt for every mode",
			files: map[string]string{"mine.tmpl": "Mine: {{.Mode}} {{.Marker}}"},
			file:  "mine.tmpl",
			mode:  ModeSelfReasoning,
			want:  []string{"Mine: self_reasoning TASK_COMPLETE:"},
		},
		{
			name:  "a file of only defines changes no main template",
			files: map[string]string{"extra.tmpl": "{{define \"instructions\"}}EXTRA{{end}}\n\n"},
			mode:  ModeTools,
			want:  []string{"# How to work", "EXTRA"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeFiles(t, tt.files)
			if tt.file != "" {
				path = filepath.Join(path, tt.file)
			}
			d := standardData(tt.mode)
			s, err := Build(d, Options{TemplatePath: path})
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

func TestMessageOverride(t *testing.T) {
	dir := writeFiles(t, map[string]string{"messages.tmpl": `{{define "wrap_up"}}Done because {{.Reason}}.{{end}}`})
	b, err := New(Options{TemplatePath: dir})
	if err != nil {
		t.Fatal(err)
	}
	if got := b.WrapUp("time ran out"); got != "Done because time ran out." {
		t.Errorf("WrapUp = %q", got)
	}
	// Messages not overridden keep their default text.
	if got, want := b.Correction("bad JSON"), Correction("bad JSON"); got != want {
		t.Errorf("Correction = %q, want the default %q", got, want)
	}
}

func TestTemplateErrors(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		path  string // relative to the temp dir; "" is the dir itself
		want  []string
	}{
		{"parse error names file and line",
			map[string]string{"system.tmpl": "line one\nline two {{.Tools"},
			"system.tmpl", []string{"system.tmpl", "system.tmpl:2:"}},
		{"unknown field fails at New, not mid-session",
			map[string]string{"system.tmpl": "ok\n{{.Nope}}"},
			"", []string{"system.tmpl:2", "Nope"}},
		{"broken message override",
			map[string]string{"messages.tmpl": `{{define "wrap_up"}}{{.Why}}{{end}}`},
			"", []string{`"wrap_up"`, "Why"}},
		{"unknown template function",
			map[string]string{"system.tmpl": "{{shout .Mode}}"},
			"", []string{"system.tmpl:1", "shout"}},
		{"empty directory", map[string]string{"notes.txt": "x"}, "", []string{"has no *.tmpl files"}},
		{"missing path", nil, "absent.tmpl", []string{"absent.tmpl"}},
		{"two main templates",
			map[string]string{"a.tmpl": "A", "b.tmpl": "B"},
			"", []string{"a.tmpl and b.tmpl would replace the system prompt"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := writeFiles(t, tt.files)
			path := filepath.Join(dir, tt.path)
			_, err := New(Options{TemplatePath: path})
			if err == nil {
				t.Fatal("New succeeded, want an error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if tt.path != "" && !strings.Contains(err.Error(), path) {
				t.Errorf("error %q does not name the file %s", err, path)
			}
		})
	}
}

func TestBuilderConcurrent(t *testing.T) {
	b, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan string)
	for range 8 {
		go func() {
			s, err := b.Build(standardData(ModeTools))
			if err != nil {
				s = err.Error()
			}
			done <- s + b.StuckNudge("x", "")
		}()
	}
	first := <-done
	for range 7 {
		if s := <-done; s != first {
			t.Error("concurrent builds differ")
		}
	}
}
