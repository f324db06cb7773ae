// Package protocol runs named, reusable sequences of steps (seed 002): each
// step has an instruction for the model and a required output — a file the
// step must create, a person's confirmation, or nothing. A protocol is a
// loop.Gate: it hands the model one step at a time, checks the step's
// output when the model says it is done, and records each step's output and
// tool calls as step.finished events in the session.
package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
)

// Required outputs.
const (
	OutputFile         = "file_creation"
	OutputConfirmation = "user_confirmation"
	OutputNone         = "none"
)

// Protocol is a named sequence of steps.
type Protocol struct {
	ID          string `json:"id"`
	Title       string `json:"title"`
	Description string `json:"description,omitempty"`
	Steps       []Step `json:"steps"`
}

// Step is one step of a protocol.
type Step struct {
	ID          string `json:"id"`
	Title       string `json:"title"`
	Instruction string `json:"instruction"`
	// RequiredOutput is file_creation, user_confirmation or none.
	RequiredOutput string `json:"required_output"`
	// File is the path (relative to the workspace) a file_creation step
	// must create. Empty means any new file.
	File string `json:"file,omitempty"`
}

var idPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,63}$`)

// Load reads a protocol file. Errors name the file and the step.
func Load(path string) (*Protocol, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("protocol: %w", err)
	}
	p, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("protocol %s: %w", path, err)
	}
	return p, nil
}

// Parse decodes and checks a protocol.
func Parse(data []byte) (*Protocol, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var p Protocol
	if err := dec.Decode(&p); err != nil {
		return nil, fmt.Errorf("not a valid protocol: %w", err)
	}
	var problems []string
	if !idPattern.MatchString(p.ID) {
		problems = append(problems, fmt.Sprintf("id %q: use lowercase letters, digits, '.', '_' or '-'", p.ID))
	}
	if strings.TrimSpace(p.Title) == "" {
		problems = append(problems, "title is empty")
	}
	if len(p.Steps) == 0 {
		problems = append(problems, "no steps")
	}
	seen := map[string]bool{}
	for i, s := range p.Steps {
		where := fmt.Sprintf("step %d (%s)", i+1, s.ID)
		switch {
		case !idPattern.MatchString(s.ID):
			problems = append(problems, fmt.Sprintf("step %d: id %q: use lowercase letters, digits, '.', '_' or '-'", i+1, s.ID))
		case seen[s.ID]:
			problems = append(problems, where+": duplicate id")
		}
		seen[s.ID] = true
		if strings.TrimSpace(s.Title) == "" {
			problems = append(problems, where+": title is empty")
		}
		if strings.TrimSpace(s.Instruction) == "" {
			problems = append(problems, where+": instruction is empty")
		}
		switch s.RequiredOutput {
		case OutputFile, OutputConfirmation, OutputNone:
		case "":
			p.Steps[i].RequiredOutput = OutputNone
		default:
			problems = append(problems, fmt.Sprintf("%s: required_output %q: use file_creation, user_confirmation or none", where, s.RequiredOutput))
		}
		if s.File != "" && s.RequiredOutput != OutputFile {
			problems = append(problems, where+": file is only used with required_output file_creation")
		}
	}
	if len(problems) > 0 {
		return nil, errors.New(strings.Join(problems, "; "))
	}
	return &p, nil
}
