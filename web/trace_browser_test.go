package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/agentloop/agentloop/loop"
)

// traceBar is one drawn bar of the waterfall, as the page laid it out.
type traceBar struct {
	Kind  string  `json:"kind"`
	W     float64 `json:"w"`
	Title string  `json:"title"`
}

type traceRowSeen struct {
	Step int        `json:"step"`
	Bars []traceBar `json:"bars"`
}

// traceRows reads the waterfall's rows and the rendered width of each
// bar, in one step of the page's JavaScript.
func (b *browser) traceRows() []traceRowSeen {
	b.t.Helper()
	js := `JSON.stringify([...document.querySelectorAll("#trace-rows .tr-row")].map(r => ({step: +r.dataset.step,
		bars: [...r.querySelectorAll("rect[data-kind]")].map(x => ({kind: x.dataset.kind, w: x.getBoundingClientRect().width, title: x.textContent}))})))`
	out, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](js))
	if err != nil {
		b.fail(err)
	}
	var rows []traceRowSeen
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		b.t.Fatalf("%v: %s", err, out)
	}
	return rows
}

// chartCols reads a chart's columns: each one's title and the summed
// height of its drawn bars.
func (b *browser) chartCols(id string) (titles []string, heights []float64) {
	b.t.Helper()
	js := fmt.Sprintf(`JSON.stringify([...document.querySelectorAll("#%s .tr-col")].map(g => [g.querySelector("title").textContent,
		[...g.querySelectorAll("rect:not(.tr-hit)")].reduce((a, r) => a + r.getBoundingClientRect().height, 0)]))`, id)
	out, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](js))
	if err != nil {
		b.fail(err)
	}
	var cols [][2]any
	if err := json.Unmarshal([]byte(out), &cols); err != nil {
		b.t.Fatalf("%v: %s", err, out)
	}
	for _, c := range cols {
		titles = append(titles, c[0].(string))
		heights = append(heights, c[1].(float64))
	}
	return titles, heights
}

// postSession starts a session over the API and returns its id.
func postSession(t *testing.T, url, body string) string {
	t.Helper()
	resp, err := http.Post(url+"/v1/sessions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var c struct{ ID, Detail string }
	json.NewDecoder(resp.Body).Decode(&c)
	if resp.StatusCode != 201 {
		t.Fatalf("create: %d %s", resp.StatusCode, c.Detail)
	}
	return c.ID
}

// traceState is the part of GET /v1/sessions/{id} the trace draws from.
type traceState struct {
	Iterations []struct {
		Number    int       `json:"number"`
		StartedAt time.Time `json:"started_at"`
		Messages  []struct {
			Role string    `json:"role"`
			Kind string    `json:"kind"`
			Time time.Time `json:"timestamp"`
		} `json:"messages"`
		ToolCalls []struct {
			Name     string        `json:"tool_name"`
			Duration loop.Duration `json:"duration"` // "1.5s" on the wire
		} `json:"tool_calls"`
		Usage struct {
			In  int `json:"input_tokens"`
			Out int `json:"output_tokens"`
		} `json:"usage"`
		CostUSD float64 `json:"cost_usd"`
	} `json:"iterations"`
}

func getState(t *testing.T, url, id string) traceState {
	t.Helper()
	resp, err := http.Get(url + "/v1/sessions/" + id)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var s traceState
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
		t.Fatal(err)
	}
	return s
}

func bar(t *testing.T, r traceRowSeen, kind string) traceBar {
	t.Helper()
	for _, x := range r.Bars {
		if x.Kind == kind {
			return x
		}
	}
	t.Fatalf("step %d has no %s bar: %+v", r.Step, kind, r.Bars)
	return traceBar{}
}

func near(got, want, tol float64) bool { return math.Abs(got-want) <= tol*want }

// A scripted session with model delays and a slow command: the waterfall
// has one row per step, each bar as wide as the time the log recorded
// (the slow model call and the slow command long, the quick file write
// short), and the token and cost charts one column per step, as tall as
// the recorded usage, with the exact numbers in their titles.
func TestTraceWaterfall(t *testing.T) {
	b := newBrowser(t, "auto")
	// The price table matches a model by the last segment of its name, so
	// a script saved as gpt-4.1-mini.json is priced as gpt-4.1-mini: the
	// costs drawn are the runner's own.
	dir := filepath.Join(b.dir, "priced")
	os.MkdirAll(dir, 0o700)
	script := filepath.Join(dir, "gpt-4.1-mini.json")
	os.WriteFile(script, []byte(`{"steps":[
		{"text":"Waiting on purpose.","tool_calls":[{"name":"execute_command","arguments":{"command":"sleep 0.8"}}],"delay":"200ms","usage":{"input_tokens":1000,"output_tokens":100}},
		{"tool_calls":[{"name":"write_file","arguments":{"path":"a.txt","content":"a"}}],"delay":"800ms","usage":{"input_tokens":3000,"output_tokens":300}},
		{"text":"Done.","delay":"200ms","usage":{"input_tokens":4000,"output_tokens":50}}]}`), 0o600)
	id := postSession(t, b.url, fmt.Sprintf(`{"task":"Wait, write, answer","model":"script:%s"}`, script))
	b.run(chromedp.Navigate(b.url+"/#/s/"+id), chromedp.WaitVisible(chromedp.CSS(status("completed"))), chromedp.WaitVisible(chromedp.CSS("#trace")))
	b.waitText("#trace h2", "3 steps")
	st := getState(t, b.url, id)
	if len(st.Iterations) != 3 {
		t.Fatalf("%d iterations recorded", len(st.Iterations))
	}
	rows := b.traceRows()
	if len(rows) != 3 {
		t.Fatalf("%d rows: %+v", len(rows), rows)
	}
	for i, r := range rows {
		if r.Step != i+1 {
			t.Fatalf("row %d is step %d", i, r.Step)
		}
	}
	if n := len(rows[2].Bars); n != 1 || rows[2].Bars[0].Kind != "model" {
		t.Errorf("the answering step has only its model call: %+v", rows[2].Bars)
	}
	// Widths follow the recorded durations (one time axis for all rows).
	modelMS := func(i int) float64 {
		it := st.Iterations[i]
		for _, m := range it.Messages {
			if m.Role == "assistant" && m.Kind == "" {
				return float64(m.Time.Sub(it.StartedAt).Milliseconds())
			}
		}
		t.Fatalf("step %d has no reply", i+1)
		return 0
	}
	m1, m2, tool1 := bar(t, rows[0], "model").W, bar(t, rows[1], "model").W, bar(t, rows[0], "tool").W
	if want := modelMS(1) / modelMS(0); !near(m2/m1, want, 0.1) {
		t.Errorf("model bars %.1f and %.1f px: ratio %.2f, the recorded durations' %.2f", m1, m2, m2/m1, want)
	}
	if want := float64(st.Iterations[0].ToolCalls[0].Duration) / 1e6 / modelMS(1); !near(tool1/m2, want, 0.1) {
		t.Errorf("the command's bar %.1f px against step 2's model bar %.1f px: ratio %.2f, recorded %.2f", tool1, m2, tool1/m2, want)
	}
	// And the recorded durations follow the script, loosely: the 800 ms
	// model call is the longer one, the 0.8 s command outlasts the write.
	if m2 < 1.8*m1 || m2 > 8*m1 {
		t.Errorf("an 800 ms model call drawn %.1f px, a 200 ms one %.1f px", m2, m1)
	}
	if w := bar(t, rows[1], "tool").W; tool1 < 3*w {
		t.Errorf("sleep 0.8 drawn %.1f px, a file write %.1f px", tool1, w)
	}
	if title := bar(t, rows[0], "tool").Title; !strings.Contains(title, "Step 1 · execute_command: ") {
		t.Errorf("the command's title %q", title)
	}

	titles, heights := b.chartCols("trace-tokens")
	if len(titles) != 3 {
		t.Fatalf("token chart columns: %q", titles)
	}
	if want := "Step 3: 4,050 tokens (4,000 in + 50 out)"; titles[2] != want {
		t.Errorf("token title %q, want %q", titles[2], want)
	}
	if !near(heights[0]/heights[2], 1100.0/4050, 0.05) || !near(heights[1]/heights[2], 3300.0/4050, 0.05) {
		t.Errorf("token bar heights %v, want in ratio 1100:3300:4050", heights)
	}
	costs, cheights := b.chartCols("trace-cost")
	if len(costs) != 3 || st.Iterations[0].CostUSD == 0 {
		t.Fatalf("cost columns %q, step 1's recorded cost %v", costs, st.Iterations[0].CostUSD)
	}
	if want := fmt.Sprintf("Step 1: $%.6f", st.Iterations[0].CostUSD); costs[0] != want {
		t.Errorf("cost title %q, want %q", costs[0], want)
	}
	if want := st.Iterations[1].CostUSD / st.Iterations[0].CostUSD; !near(cheights[1]/cheights[0], want, 0.05) {
		t.Errorf("cost bar heights %v, recorded ratio %.2f", cheights, want)
	}
	b.shot("trace-three-steps")

	// A step's label opens its details. The page re-renders for it, with
	// no new event: the trace card is the same node, not redrawn.
	if _, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](`document.querySelector("#trace").dataset.mark = "kept"`)); err != nil {
		t.Fatal(err)
	}
	b.run(click(`#trace-rows .tr-row[data-step="2"] button`))
	b.waitText("#iteration", "write_file")
	if got := b.text("#trace[data-mark=kept] h2"); got == "" {
		t.Error("the trace was redrawn by a re-render with no new event")
	}
}

// A call waiting for approval: the step's row shows the wait before the
// tool ran, as its own bar.
func TestTraceShowsTheWaitForApproval(t *testing.T) {
	b := newBrowser(t, "ask")
	id := postSession(t, b.url, fmt.Sprintf(`{"task":"Write the greeting","model":%q}`, b.script(
		`{"tool_calls":[{"name":"write_file","arguments":{"path":"hello.txt","content":"hi"}}]}`, `{"text":"Wrote hello.txt."}`)))
	b.run(chromedp.Navigate(b.url+"/#/s/"+id), chromedp.WaitVisible(chromedp.CSS("#approval")))
	// Waiting for a person is a state the test holds, not a race: the
	// approval comes only once the page has shown the step's row.
	b.run(chromedp.WaitVisible(chromedp.CSS(`#trace-rows .tr-row[data-step="1"]`)), click("#btn-approve"),
		chromedp.WaitVisible(chromedp.CSS(status("completed"))))
	b.waitText("#trace h2", "2 steps")
	rows := b.traceRows()
	if len(rows) != 2 {
		t.Fatalf("rows: %+v", rows)
	}
	wait := bar(t, rows[0], "wait")
	if !strings.Contains(wait.Title, "waiting before write_file ran") {
		t.Errorf("wait title %q", wait.Title)
	}
	kinds := []string{}
	for _, x := range rows[0].Bars {
		kinds = append(kinds, x.Kind)
	}
	if strings.Join(kinds, ",") != "model,wait,tool" {
		t.Errorf("step 1's bars in order: %v", kinds)
	}
	b.shot("trace-approval-wait")
}

// One step and 150 steps both read: a single row; then one row per step
// in a scrolling box, and charts that group steps into at most 120 bars.
func TestTraceOneAndManySteps(t *testing.T) {
	b := newBrowser(t, "auto")
	one := postSession(t, b.url, fmt.Sprintf(`{"task":"Say hello","model":%q}`, b.script(`{"text":"Hello.","delay":"50ms"}`)))
	b.run(chromedp.Navigate(b.url+"/#/s/"+one), chromedp.WaitVisible(chromedp.CSS(status("completed"))), chromedp.WaitVisible(chromedp.CSS("#trace")))
	b.waitText("#trace h2", "1 step in")
	if rows := b.traceRows(); len(rows) != 1 || len(rows[0].Bars) != 1 || rows[0].Bars[0].W < 100 {
		t.Fatalf("one step: %+v", rows)
	}
	b.shot("trace-one-step")

	var steps []string
	for i := range 149 {
		steps = append(steps, fmt.Sprintf(`{"tool_calls":[{"name":"write_file","arguments":{"path":"f%d.txt","content":"%d"}}]}`, i, i))
	}
	many := postSession(t, b.url, fmt.Sprintf(`{"task":"Write 149 files","max_iterations":150,"model":%q}`, b.script(append(steps, `{"text":"done"}`)...)))
	b.run(chromedp.Navigate(b.url+"/#/s/"+many), chromedp.WaitVisible(chromedp.CSS(status("completed"))))
	b.waitText("#trace h2", "150 steps")
	if rows := b.traceRows(); len(rows) != 150 {
		t.Fatalf("%d rows for 150 steps", len(rows))
	}
	titles, _ := b.chartCols("trace-tokens")
	if len(titles) != 75 || !strings.HasPrefix(titles[0], "Steps 1–2: ") || !strings.HasPrefix(titles[74], "Steps 149–150: ") {
		t.Fatalf("150 steps in %d token bars: first %q", len(titles), titles[0])
	}
	box, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](`(() => { const r = document.querySelector("#trace-rows"); return r.scrollHeight + " " + r.clientHeight })()`))
	if err != nil {
		t.Fatal(err)
	}
	var scroll, client int
	fmt.Sscan(box, &scroll, &client)
	if client == 0 || client > 400 || scroll <= client {
		t.Errorf("the rows box is %d px high for %d px of rows: it should scroll", client, scroll)
	}
	b.shot("trace-150-steps")
	b.traceShot("trace-150-steps-card")
}

// traceShot saves a screenshot of the trace card alone (a long page's
// full screenshot shrinks it past reading).
func (b *browser) traceShot(name string) {
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.Screenshot(chromedp.CSS("#trace")))
	if err == nil {
		err = os.WriteFile(filepath.Join("testdata", "screenshots", name+".png"), png, 0o644)
	}
	if err != nil {
		b.t.Logf("screenshot %s: %v", name, err)
	}
}
