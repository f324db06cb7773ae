package web_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// gate is a command for a scripted step that runs through the first time
// it is played and, played again (after a rewind), waits until the test
// lets it go: what the page shows right after a rewind is then a state
// the test holds, however fast the machine is.
func gate(dir string) string {
	played, release := filepath.Join(dir, "played"), filepath.Join(dir, "release")
	return fmt.Sprintf(`{"tool_calls":[{"name":"execute_command","arguments":{"command":"if [ -e %s ]; then while [ ! -e %s ]; do sleep 0.05; done; else touch %s; fi"}}]}`, played, release, played)
}

// From the page: rewind an ended session to step 2 with a message. The
// confirmation lists the files that change and the steps set aside; the
// workspace is then as it was after step 2, byte for byte; the set-aside
// steps stay on the page, greyed and marked rewound; the session resumed
// with the message and runs on to its end.
func TestRewindFromThePage(t *testing.T) {
	b := newCheckpointBrowser(t, "auto")
	gateDir := t.TempDir()
	id := postSession(t, b.url, fmt.Sprintf(`{"task":"Write the notes","model":%q}`, b.script(
		`{"tool_calls":[{"name":"write_file","arguments":{"path":"a.txt","content":"one\n"}}]}`,
		`{"tool_calls":[{"name":"write_file","arguments":{"path":"b.txt","content":"two\n"}}]}`,
		gate(gateDir),
		`{"tool_calls":[{"name":"write_file","arguments":{"path":"a.txt","content":"one\nthree\n"}}]}`,
		`{"tool_calls":[{"name":"execute_command","arguments":{"command":"rm b.txt"}}]}`,
		`{"text":"Wrote a.txt and removed b.txt."}`)))
	st := waitEnded(t, b.url, id)
	if got := files(t, st.Workspace); !sameFiles(got, map[string]string{"a.txt": "one\nthree\n"}) {
		t.Fatalf("before the rewind the workspace holds %q", got)
	}

	b.run(chromedp.Navigate(b.url+"/#/s/"+id), chromedp.WaitVisible(chromedp.CSS(status("completed"))),
		click(`[data-rewind="2"]`), chromedp.WaitVisible(chromedp.CSS("#rewind-files")))
	if got := eval[string](b, `[...document.querySelectorAll("#rewind-files li")].map(l => l.dataset.path + ":" + l.dataset.change).join(" ")`); got != "a.txt:modified b.txt:added" {
		t.Errorf("the confirmation lists %q", got)
	}
	if got := b.text("#rewind-steps"); !strings.HasPrefix(got, "Steps 3–6 are set aside") {
		t.Errorf("the confirmation says %q", got)
	}
	if got := b.text("#rewind-resumes"); !strings.Contains(got, "left paused") {
		t.Errorf("without a message: %q", got)
	}
	// The dry run changed nothing.
	if got := files(t, st.Workspace); !sameFiles(got, map[string]string{"a.txt": "one\nthree\n"}) {
		t.Fatalf("the dry run changed the workspace: %q", got)
	}
	b.run(chromedp.SendKeys(chromedp.CSS("#rewind-message"), "Keep b.txt this time."))
	b.waitText("#rewind-resumes", "resumes from the end of step 2 at once, with your message")
	b.shot("rewind-dialog")
	b.run(click("#rewind-ok"))

	// The resumed step 3 waits at its gate: the session is running, and
	// the workspace is step 2's.
	b.waitJS("four steps marked rewound", `document.querySelectorAll("#timeline .iter.rewound").length === 4`)
	b.run(chromedp.WaitVisible(chromedp.CSS(status("running"))), chromedp.WaitVisible(chromedp.CSS(`#timeline .iter:not(.rewound)[data-n="3"]`)))
	if got, want := files(t, st.Workspace), map[string]string{"a.txt": "one\n", "b.txt": "two\n"}; !sameFiles(got, want) {
		t.Errorf("after the rewind the workspace holds %q, want %q", got, want)
	}
	// The message follows step 2: what the model read before the new step 3.
	if got := b.text(`#timeline .iter[data-n="2"]`); !strings.Contains(got, "Keep b.txt this time.") {
		t.Errorf("step 2 is not followed by the message: %q", got)
	}
	if n := eval[int](b, `document.querySelectorAll("#timeline .iter.rewound [data-rewind], #timeline .iter.rewound [data-fork]").length`); n != 0 {
		t.Errorf("%d rewind or fork buttons on rewound steps", n)
	}
	// A running session can be forked, not rewound.
	if !eval[bool](b, `!document.querySelector("[data-rewind]") && !!document.querySelector('[data-fork="2"]')`) {
		t.Error("a running session should offer fork and not rewind")
	}
	tags := eval[string](b, `[...document.querySelectorAll("#timeline .iter.rewound")].map(e => e.dataset.n + ":" + e.querySelector(".rewound-tag").textContent + ":" + getComputedStyle(e).opacity).join(" ")`)
	if tags != "6:rewound:0.55 5:rewound:0.55 4:rewound:0.55 3:rewound:0.55" {
		t.Errorf("rewound steps as drawn (step:tag:opacity): %q", tags)
	}
	// The trace draws the set-aside tries where they ran, named as such.
	if got := eval[string](b, `[...document.querySelectorAll("#trace-rows .tr-row.tr-rewound .tr-label")].map(e => e.textContent).join(", ")`); got != "Step 3 · rewound, Step 4 · rewound, Step 5 · rewound, Step 6 · rewound" {
		t.Errorf("rewound rows in the trace: %q", got)
	}
	b.shot("rewound-resumed")

	if err := os.WriteFile(filepath.Join(gateDir, "release"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	b.run(chromedp.WaitVisible(chromedp.CSS(status("completed"))))
	end := waitEnded(t, b.url, id)
	rewound := 0
	for _, it := range end.Iterations {
		if it.Rewound {
			rewound++
		}
	}
	if len(end.Iterations) != 10 || rewound != 4 {
		t.Errorf("%d steps, %d rewound; want 10 and 4", len(end.Iterations), rewound)
	}
	if got := files(t, end.Workspace); !sameFiles(got, map[string]string{"a.txt": "one\nthree\n"}) {
		t.Errorf("at the end the workspace holds %q", got)
	}
	b.shot("rewound-completed")

	// Step 4 ran twice: the try set aside and the live one each have
	// their own details, and only the one chosen is marked.
	b.run(click(`[data-details="4-r1"]`))
	b.waitText("#iteration h2", "Step 4 (rewound)")
	if got := eval[string](b, `[...document.querySelectorAll("#timeline .iter.selected")].map(e => e.dataset.n + (e.classList.contains("rewound") ? "r" : "")).join(" ") + " " + location.hash.split("?")[1]`); got != "4r step=4-r1" {
		t.Errorf("choosing the rewound step 4 marks %q", got)
	}
	b.shot("rewound-step-details")
	b.run(click(`[data-details="4"]`))
	b.waitJS("the live step 4's details", `document.querySelector("#iteration h2").textContent === "Step 4"`)
	if got := eval[string](b, `[...document.querySelectorAll("#timeline .iter.selected")].map(e => e.dataset.n + (e.classList.contains("rewound") ? "r" : "")).join(" ") + " " + document.querySelector("#iteration h2").textContent`); got != "4 Step 4" {
		t.Errorf("choosing the live step 4 marks %q", got)
	}
	// The trace's rows open the same details.
	b.run(click(`#trace-rows .tr-row.tr-rewound[data-step="5"] button`))
	b.waitText("#iteration h2", "Step 5 (rewound)")
	// The address names the try: a reload shows the same one.
	b.run(chromedp.Navigate(b.url + "/#/s/" + id + "?step=4-r1"))
	b.waitText("#iteration h2", "Step 4 (rewound)")
}

// A server that keeps no checkpoints offers neither rewind nor fork, and
// says why on the session page; the API refuses a rewind with a 400 the
// page would show.
func TestNoCheckpointsNoRewindOrFork(t *testing.T) {
	b := newBrowser(t, "auto")
	id := postSession(t, b.url, fmt.Sprintf(`{"task":"Write a note","model":%q}`, b.script(originalScript, `{"text":"Wrote a.txt."}`)))
	waitEnded(t, b.url, id)
	b.run(chromedp.Navigate(b.url+"/#/s/"+id), chromedp.WaitVisible(chromedp.CSS(status("completed"))), chromedp.WaitVisible(chromedp.CSS("#fork-none")))
	if n := eval[int](b, `document.querySelectorAll("[data-fork], [data-rewind]").length`); n != 0 {
		t.Errorf("%d rewind or fork buttons on a session with no checkpoints", n)
	}
	b.shot("no-checkpoints")
	post(t, b.url+"/v1/sessions/"+id+"/rewind", `{"at":1,"dry_run":true}`, 400, nil)
}

// A rewind the server refuses — here the session's checkpoints are gone
// from the machine — says why in the confirmation, which offers no
// Rewind button to press.
func TestRewindRefusedSaysWhy(t *testing.T) {
	b := newCheckpointBrowser(t, "auto")
	id := postSession(t, b.url, fmt.Sprintf(`{"task":"Write a note","model":%q}`, b.script(originalScript, `{"text":"Wrote a.txt."}`)))
	waitEnded(t, b.url, id)
	if err := os.RemoveAll(filepath.Join(b.dir, "checkpoints")); err != nil {
		t.Fatal(err)
	}
	b.run(chromedp.Navigate(b.url+"/#/s/"+id), chromedp.WaitVisible(chromedp.CSS(status("completed"))),
		click(`[data-rewind="1"]`), chromedp.WaitVisible(chromedp.CSS("#rewind-refused")))
	if got := b.text("#rewind-refused"); !strings.Contains(got, "the workspace of step 1 is not on this machine") {
		t.Errorf("the refusal says %q", got)
	}
	if !eval[bool](b, `document.querySelector("#rewind-ok").disabled && document.querySelector("#rewind-ask").hidden`) {
		t.Error("a refused rewind still asks for a message, or can be confirmed")
	}
	b.shot("rewind-refused")
}

// A paused session rewound from the page resumes at once, with no
// message: the confirmation says so, and the session runs on from the
// step it was taken back to, to its end.
func TestRewindAPausedSessionResumesIt(t *testing.T) {
	b := newCheckpointBrowser(t, "auto")
	release := filepath.Join(t.TempDir(), "release")
	id := postSession(t, b.url, fmt.Sprintf(`{"task":"Write the notes","model":%q}`, b.script(
		originalScript,
		// Step 2 holds until the test lets it go, so the page can pause
		// the session while it runs, however fast the machine is.
		fmt.Sprintf(`{"tool_calls":[{"name":"execute_command","arguments":{"command":"while [ ! -e %s ]; do sleep 0.05; done; echo two > b.txt"}}]}`, release),
		`{"tool_calls":[{"name":"write_file","arguments":{"path":"a.txt","content":"one\nthree\n"}}]}`,
		`{"text":"Done."}`)))
	b.run(chromedp.Navigate(b.url+"/#/s/"+id), chromedp.WaitVisible(chromedp.CSS(`#timeline .iter[data-n="2"]`)), click("#btn-pause"))
	if err := os.WriteFile(release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	b.run(chromedp.WaitVisible(chromedp.CSS(status("paused"))), click(`[data-rewind="1"]`), chromedp.WaitVisible(chromedp.CSS("#rewind-files")))
	st := readState(t, b.url, id)
	if got := files(t, st.Workspace); !sameFiles(got, map[string]string{"a.txt": "one\n", "b.txt": "two\n"}) {
		t.Fatalf("paused after step 2, the workspace holds %q", got)
	}
	if got := eval[string](b, `[...document.querySelectorAll("#rewind-files li")].map(l => l.dataset.path + ":" + l.dataset.change).join(" ")`); got != "b.txt:deleted" {
		t.Errorf("the confirmation lists %q", got)
	}
	if got := b.text("#rewind-resumes"); got != "The session resumes from the end of step 1 at once." {
		t.Errorf("a paused session's confirmation says %q", got)
	}
	b.shot("rewind-paused-dialog")
	b.run(click("#rewind-ok"), chromedp.WaitVisible(chromedp.CSS(status("completed"))))
	end := waitEnded(t, b.url, id)
	var rewound []int
	for _, it := range end.Iterations {
		if it.Rewound {
			rewound = append(rewound, it.Number)
		}
	}
	if len(end.Iterations) != 5 || len(rewound) != 1 || rewound[0] != 2 {
		t.Errorf("%d steps, rewound %v; want 5 steps, step 2 rewound", len(end.Iterations), rewound)
	}
	if got := files(t, end.Workspace); !sameFiles(got, map[string]string{"a.txt": "one\nthree\n", "b.txt": "two\n"}) {
		t.Errorf("at the end the workspace holds %q", got)
	}
	b.shot("rewind-paused-completed")
}
