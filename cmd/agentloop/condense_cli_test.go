package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// condensingRun runs, through the binary, a session whose short command
// results outgrow a small context window, with a profile that has a
// scripted condense model write the summaries. It returns the CLI (with
// the session in its database) and the session's id.
func condensingRun(t *testing.T) (*cli, string) {
	t.Helper()
	var steps []string
	for i := range 14 {
		steps = append(steps, fmt.Sprintf(`{"tool_calls":[{"name":"execute_command","arguments":{"command":"seq %d 60 | head -n 40"}}]}`, i+1))
	}
	main := writeSteps(t, append(steps, `{"text":"counted"}`)...)
	summary := filepath.Join(t.TempDir(), "summary.json")
	if err := os.WriteFile(summary, []byte(`{"repeat":true,"steps":[{"text":"USER_CONTEXT: count with seq\nCOMPLETED: ran seq from 1 on\nPENDING: the last runs","usage":{"input_tokens":1234,"output_tokens":56}}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfg, []byte("profiles:\n  summarise:\n    limits:\n      condense: model\n      condense_model: script:"+summary+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := newCLI(t)
	_, errOut, code := c.run("", "run", "--yes", "--no-progress", "0", "--max-iterations", "20", "--config", cfg, "--profile", "summarise",
		"--context-window", "3000", "--model", "script:"+main, "--dir", t.TempDir(), "count")
	if code != exitCompleted {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	return c, sessionID(t, c)
}

// condensedEvent is what a conversation.condensed carries.
type condensedEvent struct {
	Type string
	Data struct {
		Iteration    int
		DroppedFrom  int `json:"dropped_from"`
		DroppedTo    int `json:"dropped_to"`
		Summary      string
		By           string
		Asked        bool
		Model        string
		SummaryError string `json:"summary_error"`
		Usage        struct {
			InputTokens  int `json:"input_tokens"`
			OutputTokens int `json:"output_tokens"`
		}
	}
}

// checkCondensed holds the summaries in a log (JSON lines or an array of
// events) to what the condense model wrote, and returns how many.
func checkCondensed(t *testing.T, evs []condensedEvent) int {
	t.Helper()
	n := 0
	for _, e := range evs {
		if e.Type != "conversation.condensed" || e.Data.By == "" {
			continue
		}
		n++
		d := e.Data
		if d.By != "model" || !d.Asked || !strings.HasSuffix(d.Model, "summary.json") || d.SummaryError != "" || d.Iteration < 2 ||
			d.Summary != "Summary of earlier steps, written to save context:\nUSER_CONTEXT: count with seq\nCOMPLETED: ran seq from 1 on\nPENDING: the last runs" ||
			d.Usage.InputTokens != 1234 || d.Usage.OutputTokens != 56 || d.DroppedTo <= d.DroppedFrom {
			t.Fatalf("condensation: %+v", d)
		}
	}
	if n == 0 {
		t.Fatal("no turns were summarised")
	}
	return n
}

// A profile's condense: model has its condense_model summarise the dropped
// turns: the summary is in the log, its tokens in the session's usage, and
// sessions show says where and by whom.
func TestCondensationByModelThroughTheCLI(t *testing.T) {
	c, id := condensingRun(t)
	lines, _, _ := c.run("", "sessions", "show", "--events", id)
	var evs []condensedEvent
	for _, l := range strings.Split(strings.TrimSpace(lines), "\n") {
		var e condensedEvent
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			t.Fatalf("%v: %s", err, l)
		}
		evs = append(evs, e)
	}
	n := checkCondensed(t, evs)

	// The summaries count in the usage, beside the replies.
	var replies struct{ Input int }
	for _, l := range strings.Split(lines, "\n") {
		var e struct {
			Type string
			Data struct {
				Usage struct {
					InputTokens int `json:"input_tokens"`
				}
			}
		}
		if json.Unmarshal([]byte(l), &e) == nil && e.Type == "model.responded" {
			replies.Input += e.Data.Usage.InputTokens
		}
	}
	show, _, _ := c.run("", "sessions", "show", "--json", id)
	var st struct {
		Usage struct {
			InputTokens int `json:"input_tokens"`
		}
		InteractionCount int `json:"interaction_count"`
	}
	if err := json.Unmarshal([]byte(show), &st); err != nil {
		t.Fatal(err)
	}
	if st.Usage.InputTokens != replies.Input+n*1234 || st.InteractionCount != 15 {
		t.Fatalf("usage: %d input tokens, want %d from the replies and %d from %d summaries; %d model calls of the session's model",
			st.Usage.InputTokens, replies.Input, n*1234, n, st.InteractionCount)
	}

	text, _, _ := c.run("", "sessions", "show", id)
	where := regexp.MustCompile(`condensed: before step \d+: \d+ → \d+ tokens(?: · old tool output cut)? · \d+ messages replaced by a summary written by script:\S+summary\.json · 1234\+56 tokens`)
	if got := len(where.FindAllString(text, -1)); got != n {
		t.Fatalf("sessions show names %d of %d summaries:\n%s", got, n, text)
	}
}

// Over the HTTP API, the session's events carry each summary and its
// usage, and the session's state says where and how it was condensed.
func TestCondensationByModelOverTheAPI(t *testing.T) {
	c, id := condensingRun(t)
	s := c.serve()
	get := func(path string, v any) {
		t.Helper()
		resp, err := http.Get(s.url + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 || json.Unmarshal(b, v) != nil {
			t.Fatalf("GET %s: %d %.500s", path, resp.StatusCode, b)
		}
	}
	var page struct{ Events []condensedEvent }
	get("/v1/sessions/"+id+"/events?limit=1000", &page)
	n := checkCondensed(t, page.Events)

	var st struct {
		Condensations []struct {
			Iteration int
			By        string
			Model     string
			Dropped   int
			Usage     struct {
				InputTokens int `json:"input_tokens"`
			}
		}
		Usage struct {
			InputTokens int `json:"input_tokens"`
		}
	}
	get("/v1/sessions/"+id, &st)
	byModel := 0
	for _, c := range st.Condensations {
		if c.By == "model" {
			byModel++
			if c.Usage.InputTokens != 1234 || c.Dropped == 0 || c.Iteration < 2 || !strings.HasSuffix(c.Model, "summary.json") {
				t.Fatalf("condensation in the state: %+v", c)
			}
		}
	}
	if byModel != n || st.Usage.InputTokens < n*1234 {
		t.Fatalf("the state lists %d summaries of %d; %d input tokens", byModel, n, st.Usage.InputTokens)
	}
}
