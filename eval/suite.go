// Package eval runs a suite of tasks against several models, several
// times each, and reports which model can do the job: pass rate, steps,
// tokens, cost and time per model and per task.
//
// A suite is a YAML file. Each task names a workspace fixture (a
// directory copied afresh for every try), the task given to the model,
// the commands that check the work, and limits:
//
//	name: starter
//	defaults: {max_iterations: 15, timeout: 5m}
//	tasks:
//	  - name: fix-test
//	    task: Run the tests and fix the failing one.
//	    workspace: fixtures/fix-test
//	    verify: ["go test ./..."]
//
// A try passes when its session ends with an expected status (completed,
// unless the task says otherwise) and every verification command passes.
package eval

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Suite is a set of tasks to run against each model.
type Suite struct {
	Name     string `yaml:"name"`
	Defaults Limits `yaml:"defaults"`
	Tasks    []Task `yaml:"tasks"`
	// Dir is the suite file's directory: workspaces are relative to it.
	Dir string `yaml:"-"`
}

// Task is one job of the suite.
type Task struct {
	Name string `yaml:"name"`
	Task string `yaml:"task"`
	// Workspace is a fixture directory, relative to the suite file,
	// copied afresh for every try; empty: an empty workspace.
	Workspace string   `yaml:"workspace"`
	Verify    []string `yaml:"verify"`
	// Expect lists the session statuses that count as doing the job
	// (default: completed). A trap task may expect "failed": the model
	// should give up honestly rather than claim success.
	Expect []string `yaml:"expect"`
	Limits `yaml:",inline"`
}

// Limits bound one try.
type Limits struct {
	MaxIterations int           `yaml:"max_iterations"`
	Timeout       time.Duration `yaml:"timeout"`
	BudgetUSD     float64       `yaml:"budget_usd"`
	BudgetTokens  int           `yaml:"budget_tokens"`
}

// or returns l with the limits it leaves unset taken from d.
func (l Limits) or(d Limits) Limits {
	if l.MaxIterations == 0 {
		l.MaxIterations = d.MaxIterations
	}
	if l.Timeout == 0 {
		l.Timeout = d.Timeout
	}
	if l.BudgetUSD == 0 {
		l.BudgetUSD = d.BudgetUSD
	}
	if l.BudgetTokens == 0 {
		l.BudgetTokens = d.BudgetTokens
	}
	return l
}

var taskName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)

// statuses a session can end with.
var endStatuses = map[string]bool{"completed": true, "failed": true, "error": true, "terminated": true, "paused": true, "waiting": true}

// Load reads and checks a suite file. Every mistake found is reported,
// each with the task it is in.
func Load(path string) (*Suite, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var s Suite
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	s.Dir = filepath.Dir(abs)
	if s.Name == "" {
		s.Name = strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	}
	if err := s.check(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &s, nil
}

func (s *Suite) check() error {
	var errs []error
	if len(s.Tasks) == 0 {
		errs = append(errs, errors.New("no tasks: list them under `tasks:`"))
	}
	seen := map[string]bool{}
	for i, t := range s.Tasks {
		where := fmt.Sprintf("tasks[%d]", i)
		if t.Name != "" {
			where += " (" + t.Name + ")"
		}
		switch {
		case !taskName.MatchString(t.Name):
			errs = append(errs, fmt.Errorf("%s: name %q: use letters, digits, '.', '_' or '-', at most 64", where, t.Name))
		case seen[t.Name]:
			errs = append(errs, fmt.Errorf("%s: the name is used twice", where))
		}
		seen[t.Name] = true
		if strings.TrimSpace(t.Task) == "" {
			errs = append(errs, fmt.Errorf("%s: `task:` says what the model should do", where))
		}
		if t.Workspace != "" {
			if filepath.IsAbs(t.Workspace) || !filepath.IsLocal(t.Workspace) {
				errs = append(errs, fmt.Errorf("%s: workspace %q must be a directory inside the suite's directory", where, t.Workspace))
			} else if fi, err := os.Stat(filepath.Join(s.Dir, t.Workspace)); err != nil || !fi.IsDir() {
				errs = append(errs, fmt.Errorf("%s: workspace %q is not a directory next to the suite file", where, t.Workspace))
			}
		}
		for _, e := range t.Expect {
			if !endStatuses[e] {
				errs = append(errs, fmt.Errorf("%s: expect %q: use completed, failed, error, terminated, paused or waiting", where, e))
			}
		}
		l := t.Limits.or(s.Defaults)
		if l.MaxIterations < 0 || l.Timeout < 0 || l.BudgetUSD < 0 || l.BudgetTokens < 0 {
			errs = append(errs, fmt.Errorf("%s: limits cannot be negative", where))
		}
	}
	return errors.Join(errs...)
}

// expects reports whether status counts as doing the task.
func (t Task) expects(status string) bool {
	if len(t.Expect) == 0 {
		return status == "completed"
	}
	for _, e := range t.Expect {
		if e == status {
			return true
		}
	}
	return false
}
