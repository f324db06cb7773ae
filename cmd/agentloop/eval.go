package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"time"

	"github.com/agentloop/agentloop/eval"
	"github.com/agentloop/agentloop/loop"
)

func cmdEval(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("eval", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var models, only stringList
	fs.Var(&models, "model", "a model to evaluate (repeatable): PROVIDER/NAME or script:PATH")
	runs := fs.Int("runs", 1, "tries of each task by each model")
	parallel := fs.Int("parallel", 2, "tries running at once")
	fs.Var(&only, "task", "run only this task of the suite (repeatable)")
	db := dbFlag(fs)
	configPath := fs.String("config", "", "config file for the tries' sessions (providers, prices, profiles)")
	keep := fs.Bool("keep", false, "keep each try's workspace (printed in the results) instead of removing it")
	jsonOut := fs.Bool("json", false, "print the report as JSON on stdout")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: agentloop eval SUITE.yaml --model A [--model B …] [flags]")
		fmt.Fprintln(stderr, "\nRuns every task of the suite against each model, --runs times, and reports pass rate, steps,")
		fmt.Fprintln(stderr, "tokens, cost and time per model and per task. Each try runs in a fresh copy of its task's")
		fmt.Fprintln(stderr, "workspace with tools approved (the suite is yours; the sandbox still applies), and is an ordinary")
		fmt.Fprintln(stderr, "session labelled eval=RUN: inspect one with `agentloop sessions show ID`, list a run's with")
		fmt.Fprintln(stderr, "`agentloop sessions list --label eval=RUN`.\n\nFlags:")
		fs.PrintDefaults()
		fmt.Fprintln(stderr, "\nExample:\n  agentloop eval examples/evals/starter/suite.yaml --model ollama/qwen3:8b --model openai/gpt-4.1-mini --runs 3")
	}
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() != 1 {
		fmt.Fprintln(stderr, "agentloop eval: give one suite file, e.g. agentloop eval examples/evals/starter/suite.yaml --model ollama/qwen3:8b")
		return exitUsage
	}
	if len(models) == 0 {
		fmt.Fprintln(stderr, "agentloop eval: name the models to compare with --model (repeatable)")
		return exitUsage
	}
	if *runs < 1 || *runs > 100 || *parallel < 1 || *parallel > 64 {
		fmt.Fprintln(stderr, "agentloop eval: --runs must be 1-100 and --parallel 1-64")
		return exitUsage
	}
	suite, err := eval.Load(fs.Arg(0))
	if err != nil {
		fmt.Fprintf(stderr, "agentloop eval: %v\n", err)
		return exitUsage
	}
	if len(only) > 0 {
		if suite.Tasks, err = pick(suite.Tasks, only); err != nil {
			fmt.Fprintf(stderr, "agentloop eval: %v\n", err)
			return exitUsage
		}
	}
	self, err := os.Executable()
	if err != nil {
		return fail(stderr, "%v", err)
	}
	work, err := os.MkdirTemp("", "agentloop-eval-")
	if err != nil {
		return fail(stderr, "%v", err)
	}
	if !*keep {
		defer os.RemoveAll(work)
	}
	ctx, stop := interruptContext(stderr)
	defer stop()
	label := newEvalLabel()
	total := len(models) * len(suite.Tasks) * *runs
	fmt.Fprintf(stderr, "eval %s: suite %s, %d tasks × %d models × %d runs = %d tries, %d at a time\n", label, suite.Name, len(suite.Tasks), len(models), *runs, total, *parallel)
	plan := eval.Plan{Suite: suite, Models: models, Runs: *runs, Parallel: *parallel, Label: label, WorkDir: work, Keep: *keep,
		Progress: func(done, total int, r eval.Result) {
			mark := "pass"
			if !r.Passed {
				mark = "FAIL " + r.Why
			}
			fmt.Fprintf(stderr, "[%d/%d] %s  %s  try %d  %s  %s\n", done, total, r.Task, r.Model, r.Try, r.SessionID, mark)
		}}
	launch := func(ctx context.Context, tr eval.Trial) (eval.Outcome, error) {
		return runTry(ctx, self, *db, *configPath, tr)
	}
	results, err := eval.Run(ctx, plan, launch)
	if err != nil {
		return fail(stderr, "eval stopped: %v (the tries that ran are sessions labelled eval=%s)", err, label)
	}
	rep := eval.Summarise(label, suite, models, results)
	if *jsonOut {
		return printJSON(stdout, rep)
	}
	fmt.Fprintln(stdout)
	rep.Print(stdout)
	again := ""
	if *db != defaultDB() {
		again = " --db " + shellQuote(*db)
	}
	fmt.Fprintf(stdout, "\nSessions: agentloop sessions list --label eval=%s%s\n", label, again)
	if *keep {
		fmt.Fprintf(stdout, "Workspaces: %s\n", work)
	}
	return 0
}

// pick keeps the named tasks, in the suite's order.
func pick(tasks []eval.Task, names []string) ([]eval.Task, error) {
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	var kept []eval.Task
	for _, t := range tasks {
		if want[t.Name] {
			kept = append(kept, t)
			delete(want, t.Name)
		}
	}
	for n := range want {
		return nil, fmt.Errorf("--task %s: the suite has no such task", n)
	}
	return kept, nil
}

func newEvalLabel() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return time.Now().UTC().Format("20060102-150405") + "-" + hex.EncodeToString(b)
}

// runTry runs one try as `agentloop run`, in a process of its own (a try
// that crashes or hangs takes nothing else with it), and reads how its
// session ended from run's JSON.
func runTry(ctx context.Context, self, db, configPath string, tr eval.Trial) (eval.Outcome, error) {
	args := []string{"run", "--db", db, "--dir", tr.Workspace, "--yes", "--quiet", "--json", "--model", tr.Model}
	if configPath != "" {
		args = append(args, "--config", configPath)
	}
	l := tr.Limits
	if l.MaxIterations > 0 {
		args = append(args, "--max-iterations", strconv.Itoa(l.MaxIterations))
	}
	if l.Timeout > 0 {
		args = append(args, "--timeout", l.Timeout.String())
	}
	if l.BudgetUSD > 0 {
		args = append(args, "--budget-usd", strconv.FormatFloat(l.BudgetUSD, 'f', -1, 64))
	}
	if l.BudgetTokens > 0 {
		args = append(args, "--budget-tokens", strconv.Itoa(l.BudgetTokens))
	}
	for _, v := range tr.Task.Verify {
		args = append(args, "--verify", v)
	}
	for _, k := range slices.Sorted(maps.Keys(tr.Labels)) {
		args = append(args, "--label", k+"="+tr.Labels[k])
	}
	args = append(args, "--", tr.Task.Task)
	cmd := exec.CommandContext(ctx, self, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	runErr := cmd.Run()
	var st struct {
		ID         string `json:"id"`
		Status     string `json:"status"`
		Reason     string `json:"reason"`
		Iterations []struct {
			Number int `json:"number"`
		} `json:"iterations"`
		Usage struct {
			Input  int `json:"input_tokens"`
			Output int `json:"output_tokens"`
		} `json:"usage"`
		CostUSD      float64       `json:"cost_usd"`
		Duration     loop.Duration `json:"duration"` // reads "1.5s" and older runs' nanoseconds
		Verification *struct {
			Outcome string `json:"outcome"`
		} `json:"verification"`
	}
	if err := json.Unmarshal(out.Bytes(), &st); err != nil || st.ID == "" {
		var ee *exec.ExitError
		why := lastLine(errb.String())
		if why == "" && runErr != nil && !errors.As(runErr, &ee) {
			why = runErr.Error()
		}
		if why == "" {
			why = "agentloop run printed no session"
		}
		return eval.Outcome{}, errors.New(why)
	}
	o := eval.Outcome{SessionID: st.ID, Status: st.Status, Reason: st.Reason, Steps: len(st.Iterations),
		Tokens: st.Usage.Input + st.Usage.Output, CostUSD: st.CostUSD, Duration: st.Duration.Std()}
	if st.Verification != nil {
		o.Verified = st.Verification.Outcome
	}
	return o, nil
}

// lastLine is the last non-empty line of s.
func lastLine(s string) string {
	lines := bytes.Split(bytes.TrimSpace([]byte(s)), []byte("\n"))
	return string(lines[len(lines)-1])
}
