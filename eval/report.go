package eval

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// Score sums up the tries of one model, on the whole suite or one task.
type Score struct {
	Model  string `json:"model"`
	Task   string `json:"task,omitempty"`
	Tries  int    `json:"tries"`
	Passed int    `json:"passed"`
	// PassRate is Passed/Tries, from 0 to 1.
	PassRate float64 `json:"pass_rate"`
	// Means over the tries.
	Steps   float64 `json:"mean_steps"`
	Tokens  float64 `json:"mean_tokens"`
	Seconds float64 `json:"mean_seconds"`
	// CostUSD is the total over the tries.
	CostUSD float64 `json:"cost_usd"`
}

// Report is an eval run's outcome.
type Report struct {
	Label   string   `json:"label"`
	Suite   string   `json:"suite"`
	Models  []Score  `json:"models"`
	Tasks   []Score  `json:"tasks"`
	Results []Result `json:"results"`
}

// Summarise scores each model on the whole suite and on each task, in
// the order the models and tasks were given.
func Summarise(label string, s *Suite, models []string, results []Result) Report {
	rep := Report{Label: label, Suite: s.Name, Results: results}
	for _, m := range models {
		rep.Models = append(rep.Models, score(m, "", results))
	}
	for _, t := range s.Tasks {
		for _, m := range models {
			rep.Tasks = append(rep.Tasks, score(m, t.Name, results))
		}
	}
	return rep
}

func score(model, task string, results []Result) Score {
	sc := Score{Model: model, Task: task}
	for _, r := range results {
		if r.Model != model || (task != "" && r.Task != task) {
			continue
		}
		sc.Tries++
		if r.Passed {
			sc.Passed++
		}
		sc.Steps += float64(r.Steps)
		sc.Tokens += float64(r.Tokens)
		sc.Seconds += r.Seconds
		sc.CostUSD += r.CostUSD
	}
	if sc.Tries > 0 {
		n := float64(sc.Tries)
		sc.PassRate = float64(sc.Passed) / n
		sc.Steps /= n
		sc.Tokens /= n
		sc.Seconds /= n
	}
	return sc
}

// Print writes the report as tables: models first, then each task, then
// the tries that did not pass and why.
func (rep Report) Print(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "MODEL\tPASSED\tRATE\tSTEPS\tTOKENS\tCOST\tTIME\n")
	for _, s := range rep.Models {
		s.row(tw, s.Model)
	}
	tw.Flush()
	fmt.Fprintln(w)
	fmt.Fprintf(tw, "TASK\tMODEL\tPASSED\tRATE\tSTEPS\tTOKENS\tCOST\tTIME\n")
	for _, s := range rep.Tasks {
		s.row(tw, s.Task+"\t"+s.Model)
	}
	tw.Flush()
	failed := false
	for _, r := range rep.Results {
		if r.Passed {
			continue
		}
		if !failed {
			fmt.Fprintln(w, "\nNot passed:")
			failed = true
		}
		id := r.SessionID
		if id == "" {
			id = "(no session)"
		}
		fmt.Fprintf(w, "  %s  %s  try %d  %s: %s\n", r.Task, r.Model, r.Try, id, r.Why)
	}
}

func (s Score) row(w io.Writer, first string) {
	fmt.Fprintf(w, "%s\t%d/%d\t%.0f%%\t%.1f\t%.0f\t$%.4f\t%.1fs\n", first, s.Passed, s.Tries, 100*s.PassRate, s.Steps, s.Tokens, s.CostUSD, s.Seconds)
}
