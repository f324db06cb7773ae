package eval

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Trial is one try of one task by one model.
type Trial struct {
	Model string
	Task  Task
	Try   int // 1-based
	// Limits are the task's, with the suite's defaults filled in.
	Limits Limits
	// Workspace is a fresh copy of the task's fixture, for this try only.
	Workspace string
	// Labels mark the try's session so it can be found and inspected.
	Labels map[string]string
}

// Outcome is how a try's session ended, as its runner reports it.
type Outcome struct {
	SessionID string
	Status    string
	Reason    string
	Steps     int
	Tokens    int
	CostUSD   float64
	Duration  time.Duration
	// Verified is the verification outcome: pass, fail, partial_pass, or
	// empty when the task has no verification commands.
	Verified string
}

// Result is a finished try.
type Result struct {
	Model  string `json:"model"`
	Task   string `json:"task"`
	Try    int    `json:"try"`
	Passed bool   `json:"passed"`
	// Why says why a try did not pass.
	Why       string  `json:"why,omitempty"`
	SessionID string  `json:"session_id,omitempty"`
	Status    string  `json:"status,omitempty"`
	Reason    string  `json:"reason,omitempty"`
	Steps     int     `json:"steps"`
	Tokens    int     `json:"tokens"`
	CostUSD   float64 `json:"cost_usd"`
	Seconds   float64 `json:"seconds"`
}

// Launcher runs one try's session to its end.
type Launcher func(ctx context.Context, t Trial) (Outcome, error)

// Plan says what to run: each model, each task, Runs times.
type Plan struct {
	Suite  *Suite
	Models []string
	Runs   int
	// Parallel is how many tries run at once (at least 1).
	Parallel int
	// Label is the eval run's id, recorded on every session as eval=Label.
	Label string
	// WorkDir holds the tries' workspaces; each is removed after its try
	// unless Keep is set.
	WorkDir string
	Keep    bool
	// Progress, if set, hears of each finished try (from one goroutine
	// at a time).
	Progress func(done, total int, r Result)
}

// Run runs every try of the plan and returns the results in plan order
// (model, then task, then try). A try that could not run at all is a
// result that did not pass, with why; Run itself fails only when the
// context ends.
func Run(ctx context.Context, p Plan, launch Launcher) ([]Result, error) {
	var trials []Trial
	for _, m := range p.Models {
		for _, t := range p.Suite.Tasks {
			for try := 1; try <= max(p.Runs, 1); try++ {
				labels := map[string]string{"eval": p.Label, "eval_suite": p.Suite.Name, "eval_task": t.Name, "eval_model": m, "eval_try": fmt.Sprint(try)}
				if len(t.Expect) > 0 {
					// A reader of the sessions alone (the dashboard) scores
					// the try as Run does.
					labels["eval_expect"] = strings.Join(t.Expect, ",")
				}
				trials = append(trials, Trial{Model: m, Task: t, Try: try, Limits: t.Limits.or(p.Suite.Defaults), Labels: labels})
			}
		}
	}
	results := make([]Result, len(trials))
	sem := make(chan struct{}, max(p.Parallel, 1))
	var wg sync.WaitGroup
	var mu sync.Mutex
	done := 0
	for i, tr := range trials {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			wg.Wait()
			return nil, ctx.Err()
		}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			r := p.try(ctx, tr, i, launch)
			mu.Lock()
			defer mu.Unlock()
			results[i] = r
			done++
			if p.Progress != nil {
				p.Progress(done, len(trials), r)
			}
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return results, nil
}

func (p Plan) try(ctx context.Context, tr Trial, i int, launch Launcher) Result {
	r := Result{Model: tr.Model, Task: tr.Task.Name, Try: tr.Try}
	ws := filepath.Join(p.WorkDir, fmt.Sprintf("%03d-%s-%d", i+1, tr.Task.Name, tr.Try))
	if !p.Keep {
		defer os.RemoveAll(ws)
	}
	if err := os.MkdirAll(ws, 0o755); err != nil {
		r.Why = err.Error()
		return r
	}
	if tr.Task.Workspace != "" {
		if err := copyTree(filepath.Join(p.Suite.Dir, tr.Task.Workspace), ws); err != nil {
			r.Why = "copying the workspace: " + err.Error()
			return r
		}
	}
	tr.Workspace = ws
	o, err := launch(ctx, tr)
	r.SessionID, r.Status, r.Reason = o.SessionID, o.Status, o.Reason
	r.Steps, r.Tokens, r.CostUSD, r.Seconds = o.Steps, o.Tokens, o.CostUSD, o.Duration.Seconds()
	switch {
	case err != nil:
		r.Why = err.Error()
	case !tr.Task.expects(o.Status):
		r.Why = "ended " + o.Status
		if o.Reason != "" && o.Reason != o.Status {
			r.Why += " (" + o.Reason + ")"
		}
	case len(tr.Task.Verify) > 0 && o.Verified != "pass":
		r.Why = "verification: " + firstSet(o.Verified, "not run")
	default:
		r.Passed = true
	}
	return r
}

func firstSet(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

// copyTree copies the regular files and directories under src into dst.
// Symbolic links and special files are refused: a fixture is data.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(to, 0o755)
		case d.Type().IsRegular():
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			info, err := d.Info()
			if err != nil {
				return err
			}
			return os.WriteFile(to, data, info.Mode().Perm())
		default:
			return fmt.Errorf("%s: only files and directories may be in a fixture", rel)
		}
	})
}
