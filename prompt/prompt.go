// Package prompt builds the system prompt an agent session starts with and
// the short limit and warning messages the loop sends along the way.
//
// All texts come from text/template files embedded in the binary
// (templates/*.tmpl). Users can override any of them from a directory or a
// file (Options.TemplatePath); overrides are parsed and trial-run when the
// Builder is made, so a broken template fails at start-up with its file and
// line, not in the middle of a session.
package prompt

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/agentloop/agentloop/model"
)

// Mode says how the session runs, and so which system prompt it gets.
type Mode string

const (
	// ModeTools is the ReAct loop: the model calls tools until it answers
	// without a tool call. The default.
	ModeTools Mode = "tools"
	// ModeSelfReasoning lets the model reason over several turns until it
	// writes the completion marker followed by its answer.
	ModeSelfReasoning Mode = "self_reasoning"
	// ModeSingleShot is one call, no tools: answer directly.
	ModeSingleShot Mode = "single_shot"
)

// DefaultMarker is the completion marker used when Data.Marker is empty.
const DefaultMarker = "TASK_COMPLETE:"

// Data is what a system prompt is built from.
type Data struct {
	Mode  Mode             // empty means ModeTools
	Tools []model.ToolSpec // the tools offered, in the order to list them
	// Workspace describes where the agent works; see Workspace.
	Workspace WorkspaceInfo
	// Marker starts the final answer in self-reasoning mode; empty means
	// DefaultMarker.
	Marker string
	// MaxIterations, when positive, tells the model how many steps it has.
	MaxIterations int
	// Instructions are extra instructions appended under their own heading.
	Instructions string
}

// Options configure a Builder.
type Options struct {
	// TemplatePath is a directory of *.tmpl files or a single template file
	// overriding the embedded templates. A file named like an embedded one
	// (system.tmpl, self_reasoning.tmpl, partials.tmpl, messages.tmpl)
	// replaces it; {{define}} blocks in any file replace the template of the
	// same name (e.g. "workspace", "wrap_up"). A file with another name and
	// a non-empty body becomes the system prompt for every mode. Empty means
	// the embedded templates only. Output is tidied either way: trailing
	// spaces are trimmed and runs of blank lines collapsed.
	TemplatePath string
}

// Build returns the system prompt for d. With an Options argument it uses
// that template override; without one, the embedded templates.
func Build(d Data, opts ...Options) (string, error) {
	switch len(opts) {
	case 0:
		return defaultBuilder().Build(d)
	case 1:
		b, err := New(opts[0])
		if err != nil {
			return "", err
		}
		return b.Build(d)
	default:
		return "", errors.New("prompt.Build: pass at most one Options")
	}
}

// Build returns the system prompt for d.
func (b *Builder) Build(d Data) (string, error) {
	view, err := newView(d)
	if err != nil {
		return "", err
	}
	name := b.systemTemplate(view.Mode)
	s, err := b.execute(name, view)
	if err != nil {
		return "", fmt.Errorf("prompt: building the %s system prompt: %w", view.Mode, err)
	}
	return s, nil
}

var defaultBuilder = sync.OnceValue(func() *Builder {
	b, err := New(Options{})
	if err != nil {
		panic(err) // the embedded templates are covered by tests
	}
	return b
})

var blankLines = regexp.MustCompile(`\n{3,}`)

// tidy trims trailing spaces on every line and collapses runs of blank
// lines, so templates can be written for readability.
func tidy(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " \t")
	}
	s = strings.Join(lines, "\n")
	return strings.TrimSpace(blankLines.ReplaceAllString(s, "\n\n"))
}
