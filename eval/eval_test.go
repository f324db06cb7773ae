package eval

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func writeSuite(t *testing.T, yaml string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "fixtures", "a"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "fixtures", "a", "f.txt"), []byte("fixture"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "suite.yaml")
	if err := os.WriteFile(p, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoadReportsEveryMistake(t *testing.T) {
	p := writeSuite(t, `
tasks:
  - name: "bad name"
    task: ""
    workspace: ../outside
    expect: [done]
  - name: ok
    task: do it
  - name: ok
    task: again
    timeout: -1s
`)
	_, err := Load(p)
	if err == nil {
		t.Fatal("a suite full of mistakes loaded")
	}
	for _, want := range []string{`name "bad name"`, "`task:`", "inside the suite's directory", `expect "done"`, "used twice", "negative"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not say %q:\n%v", want, err)
		}
	}
	if _, err := Load(writeSuite(t, "tasks:\n  - name: x\n    task: y\n    colour: red\n")); err == nil || !strings.Contains(err.Error(), "colour") {
		t.Errorf("an unknown field is not named: %v", err)
	}
}

func TestRunScoresEachModelAndTask(t *testing.T) {
	s, err := Load(writeSuite(t, `
name: s
defaults: {max_iterations: 7, timeout: 2m}
tasks:
  - name: copy
    task: copy the file
    workspace: fixtures/a
    verify: ["test -f g.txt"]
  - name: trap
    task: give up
    expect: [failed]
    max_iterations: 3
`))
	if err != nil {
		t.Fatal(err)
	}
	var seen []Trial
	launch := func(ctx context.Context, tr Trial) (Outcome, error) {
		seen = append(seen, tr)
		if tr.Task.Name == "copy" {
			if b, err := os.ReadFile(filepath.Join(tr.Workspace, "f.txt")); err != nil || string(b) != "fixture" {
				return Outcome{}, errors.New("the fixture was not copied")
			}
			if tr.Limits.MaxIterations != 7 || tr.Limits.Timeout != 2*time.Minute {
				return Outcome{}, errors.New("the suite's defaults were not applied")
			}
			if tr.Model == "good" {
				return Outcome{SessionID: "s1", Status: "completed", Steps: 2, Tokens: 100, CostUSD: 0.01, Duration: time.Second, Verified: "pass"}, nil
			}
			return Outcome{SessionID: "s2", Status: "completed", Steps: 4, Tokens: 300, Duration: 3 * time.Second, Verified: "fail"}, nil
		}
		if tr.Limits.MaxIterations != 3 {
			return Outcome{}, errors.New("the task's own limit was not kept")
		}
		if tr.Model == "good" {
			return Outcome{SessionID: "s3", Status: "failed", Reason: "gave_up", Steps: 1}, nil
		}
		return Outcome{}, errors.New("could not start")
	}
	res, err := Run(context.Background(), Plan{Suite: s, Models: []string{"good", "bad"}, Runs: 2, Parallel: 1, Label: "L", WorkDir: t.TempDir()}, launch)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 8 || len(seen) != 8 {
		t.Fatalf("%d results from %d tries, want 8", len(res), len(seen))
	}
	if l := seen[0].Labels; l["eval_expect"] != "" || seen[2].Labels["eval_expect"] != "failed" || l["eval"] != "L" || l["eval_task"] != "copy" || l["eval_model"] != "good" || l["eval_try"] != "1" {
		t.Errorf("labels %v", l)
	}
	rep := Summarise("L", s, []string{"good", "bad"}, res)
	if g, b := rep.Models[0], rep.Models[1]; g.Passed != 4 || g.PassRate != 1 || b.Passed != 0 || b.Tries != 4 {
		t.Errorf("model scores %+v %+v", g, b)
	}
	if c := rep.Tasks[1]; c.Task != "copy" || c.Model != "bad" || c.Steps != 4 || c.Tokens != 300 || c.Seconds != 3 {
		t.Errorf("copy/bad %+v", c)
	}
	var out strings.Builder
	rep.Print(&out)
	for _, want := range []string{"good   4/4     100%", "verification: fail", "could not start", "trap  bad"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the report does not show %q:\n%s", want, out.String())
		}
	}
}

// The starter suite shipped with agentloop loads, and each of its tasks
// has the fixture it names.
func TestStarterSuiteLoads(t *testing.T) {
	s, err := Load("../examples/evals/starter/suite.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, task := range s.Tasks {
		names = append(names, task.Name)
	}
	if got := strings.Join(names, " "); got != "fix-test refactor plan stuck-trap permission-trap" {
		t.Errorf("tasks %s", got)
	}
}
