package prompt

import (
	"bytes"
	"embed"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/template"

	"github.com/agentloop/agentloop/model"
)

//go:embed templates/*.tmpl
var embedded embed.FS

// Names of the embedded template files.
const (
	systemFile        = "system.tmpl"
	selfReasoningFile = "self_reasoning.tmpl"
	partialsFile      = "partials.tmpl"
	messagesFile      = "messages.tmpl"
)

var funcs = template.FuncMap{
	"join": strings.Join,
}

// Builder renders system prompts and loop messages from a set of templates.
// It is safe for concurrent use.
type Builder struct {
	tmpl *template.Template
	// main is the name of a user template that replaces the system prompt
	// of every mode, or "".
	main string
	// fallback holds the embedded templates, used for a message when a
	// user's override fails at run time.
	fallback *template.Template
	// source names where the templates came from, for errors.
	source string
}

// New parses the embedded templates and the overrides named in opts, and
// trial-runs every template so mistakes surface here.
func New(opts Options) (*Builder, error) {
	base, err := template.New("").Funcs(funcs).ParseFS(embedded, "templates/*.tmpl")
	if err != nil {
		return nil, fmt.Errorf("prompt: embedded templates: %w", err)
	}
	b := &Builder{tmpl: base, fallback: base, source: "embedded templates"}
	if opts.TemplatePath != "" {
		if b.tmpl, err = base.Clone(); err != nil {
			return nil, fmt.Errorf("prompt: %w", err)
		}
		b.source = opts.TemplatePath
		if err := b.override(opts.TemplatePath); err != nil {
			return nil, err
		}
	}
	if err := b.check(); err != nil {
		return nil, err
	}
	return b, nil
}

// override parses the template file or directory at path over b.tmpl.
func (b *Builder) override(path string) error {
	info, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("prompt: template path: %w", err)
	}
	files := []string{path}
	if info.IsDir() {
		files, err = filepath.Glob(filepath.Join(path, "*.tmpl"))
		if err != nil {
			return fmt.Errorf("prompt: template directory %s: %w", path, err)
		}
		if len(files) == 0 {
			return fmt.Errorf("prompt: template directory %s has no *.tmpl files", path)
		}
		slices.Sort(files)
	}
	for _, f := range files {
		content, err := os.ReadFile(f)
		if err != nil {
			return fmt.Errorf("prompt: template %w", err)
		}
		name := filepath.Base(f)
		t, err := b.tmpl.New(name).Parse(string(content))
		if err != nil {
			// text/template reports "template: NAME:LINE: problem".
			return fmt.Errorf("prompt: template file %s: %w", f, err)
		}
		if !isEmbeddedName(name) && t.Tree != nil && len(t.Tree.Root.Nodes) > 0 && !onlySpace(t) {
			if b.main != "" {
				return fmt.Errorf("prompt: template directory %s: both %s and %s would replace the system prompt; "+
					"name one system.tmpl or self_reasoning.tmpl, or keep only {{define}} blocks in the other", path, b.main, name)
			}
			b.main = name
		}
	}
	return nil
}

func isEmbeddedName(name string) bool {
	switch name {
	case systemFile, selfReasoningFile, partialsFile, messagesFile:
		return true
	}
	return false
}

// onlySpace reports whether a template body renders only whitespace text
// (a file holding just {{define}} blocks and newlines).
func onlySpace(t *template.Template) bool {
	for _, n := range t.Tree.Root.Nodes {
		if strings.TrimSpace(n.String()) != "" {
			return false
		}
	}
	return true
}

// systemTemplate is the template name for a mode's system prompt.
func (b *Builder) systemTemplate(m Mode) string {
	switch {
	case b.main != "":
		return b.main
	case m == ModeSelfReasoning:
		return selfReasoningFile
	default:
		return systemFile
	}
}

func (b *Builder) execute(name string, data any) (string, error) {
	var buf bytes.Buffer
	if err := b.tmpl.ExecuteTemplate(&buf, name, data); err != nil {
		return "", fmt.Errorf("%s: %w", b.source, err)
	}
	return tidy(buf.String()), nil
}

// message renders one of the loop's messages. A user override that fails
// at run time falls back to the embedded text rather than sending the
// model nothing; New has trial-run every override, so this is a last
// resort.
func (b *Builder) message(name string, data any) string {
	if s, err := b.execute(name, data); err == nil {
		return s
	}
	var buf bytes.Buffer
	if err := b.fallback.ExecuteTemplate(&buf, name, data); err != nil {
		panic(fmt.Sprintf("prompt: embedded template %s: %v", name, err)) // covered by tests
	}
	return tidy(buf.String())
}

// check trial-runs every system prompt and message template with sample
// data.
func (b *Builder) check() error {
	sample := Data{
		Tools: []model.ToolSpec{{Name: "read_file", Description: "Read a file.",
			Parameters: []byte(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`)}},
		Workspace:     WorkspaceInfo{Root: "/w", Repository: "r", Branch: "main", Files: []string{"a.go"}},
		MaxIterations: 10,
		Instructions:  "x",
	}
	for _, m := range []Mode{ModeTools, ModeSelfReasoning, ModeSingleShot} {
		sample.Mode = m
		if _, err := b.Build(sample); err != nil {
			return err
		}
	}
	for name, data := range messageSamples() {
		if _, err := b.execute(name, data); err != nil {
			return fmt.Errorf("prompt: message template %q: %w", name, err)
		}
	}
	return nil
}
