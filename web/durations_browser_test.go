package web_test

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// durText is what the page shows for a duration (app.js fmtDur, fmtSpan).
func durText(d time.Duration) string {
	if ms := math.Round(float64(d) / 1e6); ms < 1000 {
		return fmt.Sprintf("%d ms", int(ms))
	}
	if secs := math.Round(d.Seconds()*10) / 10; secs < 60 {
		return fmt.Sprintf("%.1f s", secs)
	}
	whole := int(math.Round(d.Seconds()))
	return fmt.Sprintf("%d min %d s", whole/60, whole%60)
}

// The API writes durations as strings of seconds ("0.612s"); the session
// page shows each step's and each call's, in its header, its summary line
// and its details, as the state records them. The page's reader takes an
// older server's nanoseconds too.
func TestPageShowsStepAndCallDurations(t *testing.T) {
	b := newBrowser(t, "auto")
	model := b.script(
		`{"tool_calls":[{"name":"execute_command","arguments":{"command":"sleep 0.6"}}],"delay":"300ms"}`,
		`{"text":"Slept.","delay":"100ms"}`)
	id := postSession(t, b.url, fmt.Sprintf(`{"task":"Sleep a little","model":%q}`, model))
	b.run(chromedp.Navigate(b.url+"/#/s/"+id), chromedp.WaitVisible(chromedp.CSS(status("completed"))))

	resp, err := http.Get(b.url + "/v1/sessions/" + id)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var st struct {
		Duration   string
		Iterations []struct {
			Duration  string
			ToolCalls []struct{ Duration string } `json:"tool_calls"`
		}
	}
	if err := json.Unmarshal(raw, &st); err != nil {
		t.Fatalf("%v: %s", err, raw)
	}
	if len(st.Iterations) != 2 || len(st.Iterations[0].ToolCalls) != 1 {
		t.Fatalf("recorded %s", raw)
	}
	parse := func(s string) time.Duration {
		t.Helper()
		if !strings.HasSuffix(s, "s") || strings.ContainsAny(s, "mhµun") {
			t.Fatalf("duration %q is not seconds such as \"1.5s\"", s)
		}
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	step, call := parse(st.Iterations[0].Duration), parse(st.Iterations[0].ToolCalls[0].Duration)
	if call < 600*time.Millisecond || step < call {
		t.Fatalf("step %v, call %v: the call slept 0.6 s within the step", step, call)
	}

	if h := b.text(`.iter[data-n="1"] h3`); !strings.Contains(h, "· "+durText(step)+" ·") {
		t.Errorf("step 1's header %q does not show its %s", h, durText(step))
	}
	if s := b.text(`.iter[data-n="1"] details.tool summary`); !strings.HasSuffix(s, "success, "+durText(call)) {
		t.Errorf("the call's line %q does not end with its %s", s, durText(call))
	}
	b.run(click(`button[data-details="1"]`), chromedp.WaitVisible(chromedp.CSS(".tool-detail h4")))
	if h := b.text(".tool-detail h4"); !strings.HasSuffix(h, ", "+durText(call)) {
		t.Errorf("the call's details %q do not show its %s", h, durText(call))
	}
	kv, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](`[...document.querySelectorAll("dl.kv dt")].filter(x => x.textContent === "Duration").map(x => x.nextElementSibling.textContent).join("|")`))
	if err != nil {
		b.fail(err)
	}
	if kv != durText(step) {
		t.Errorf("step 1's details say Duration %q, want %q", kv, durText(step))
	}
	b.shot("durations-step-details")

	// The one reader every page uses: the wire form, and an older
	// server's nanoseconds, are the same seconds.
	got, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](fmt.Sprintf(
		`JSON.stringify([durSecs(%q), durSecs(%d), durSecs("0s"), durSecs(undefined), fmtDur("0s"), fmtDur(1500000000), fmtDur("2.25s"), fmtSpan(999.7), fmtSpan(59960), fmtSpan(119600)])`,
		st.Duration, int64(parse(st.Duration)))))
	if err != nil {
		b.fail(err)
	}
	var seen []any
	if err := json.Unmarshal([]byte(got), &seen); err != nil || len(seen) != 10 {
		t.Fatalf("%v: %s", err, got)
	}
	secs := parse(st.Duration).Seconds()
	for i, want := range []float64{secs, secs, 0, 0} {
		if f, _ := seen[i].(float64); math.Abs(f-want) > 1e-9 {
			t.Errorf("durSecs #%d: %v, want %v (%s)", i+1, seen[i], want, got)
		}
	}
	if seen[4] != "" || seen[5] != "1.5 s" || seen[6] != "2.3 s" {
		t.Errorf("fmtDur: %s", got)
	}
	// Rounded before the form is picked: no "1000 ms", no "60 s".
	if seen[7] != "1.0 s" || seen[8] != "1 min 0 s" || seen[9] != "2 min 0 s" {
		t.Errorf("fmtSpan at the edges: %s", got)
	}
}
