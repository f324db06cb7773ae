package web_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// From the page: fork a finished session at step 2 with another model
// and a message; the fork opens, runs to its end in its own copy of the
// workspace as of step 2, and the original is untouched. The fork tree
// shows origin and forks (a fork of a fork nested under it), and "compare
// with original" opens the compare view: totals side by side, the steps
// both share, and the diff of the final workspaces, coloured.
func TestForkFromThePageTreeAndCompare(t *testing.T) {
	b := newCheckpointBrowser(t, "auto")
	orig := postSession(t, b.url, fmt.Sprintf(`{"task":"Write the notes","model":%q}`, b.script(originalSteps()...)))
	origState := waitEnded(t, b.url, orig)
	origFiles := files(t, origState.Workspace)
	if want := map[string]string{"a.txt": "one\nthree\n"}; !sameFiles(origFiles, want) {
		t.Fatalf("the original's workspace: %q", origFiles)
	}

	b.run(chromedp.Navigate(b.url+"/#/s/"+orig), chromedp.WaitVisible(chromedp.CSS(status("completed"))),
		chromedp.WaitVisible(chromedp.CSS(`[data-fork="2"]`)))
	// Every finished step offers both, the ended session being rewindable.
	for n := 1; n <= 5; n++ {
		if !eval[bool](b, fmt.Sprintf(`!!document.querySelector('[data-fork="%d"]') && !!document.querySelector('[data-rewind="%d"]')`, n, n)) {
			t.Errorf("step %d offers no fork or no rewind", n)
		}
	}
	b.shot("fork-step-actions")

	forkModel := b.repeating(`{"tool_calls":[{"name":"write_file","arguments":{"path":"c.txt","content":"forked\n"}}]}`, `{"text":"Wrote c.txt in the fork."}`)
	// A model the server cannot read: its refusal shows in the dialog,
	// which stays open for another try.
	b.run(click(`[data-fork="2"]`), chromedp.WaitVisible(chromedp.CSS("#fork-dialog #fork-model")),
		chromedp.SetValue(chromedp.CSS("#fork-model"), "gpt-nothing"), click("#fork-ok"))
	b.waitText("#fork-error", "write it as PROVIDER/NAME")
	b.shot("fork-dialog-refused")
	b.run(chromedp.SetValue(chromedp.CSS("#fork-model"), forkModel),
		chromedp.SetValue(chromedp.CSS("#fork-message"), "Write c.txt instead of going on."))
	b.shot("fork-dialog")
	b.run(click("#fork-ok"))
	b.waitJS("the fork's page opens", fmt.Sprintf(`location.hash.startsWith("#/s/") && location.hash !== "#/s/%s"`, orig))
	fork := strings.TrimPrefix(eval[string](b, "location.hash"), "#/s/")
	b.run(chromedp.WaitVisible(chromedp.CSS(status("completed"))), chromedp.WaitVisible(chromedp.CSS(`#fork-tree [data-session="`+orig+`"] a`))) // the origin, as a link
	forkState := waitEnded(t, b.url, fork)
	if forkState.Status != "completed" || forkState.ForkedFrom == nil || forkState.ForkedFrom.ID != orig || forkState.ForkedFrom.Iteration != 2 {
		t.Fatalf("the fork: %+v", forkState)
	}
	if got, want := files(t, forkState.Workspace), map[string]string{"a.txt": "one\n", "b.txt": "two\n", "c.txt": "forked\n"}; !sameFiles(got, want) {
		t.Errorf("the fork's workspace holds %q, want %q", got, want)
	}
	if got := files(t, origState.Workspace); !sameFiles(got, origFiles) {
		t.Errorf("forking changed the original's workspace: %q", got)
	}
	if after := readState(t, b.url, orig); len(after.Iterations) != len(origState.Iterations) || after.Status != "completed" {
		t.Errorf("forking changed the original: %d steps, %s", len(after.Iterations), after.Status)
	}
	b.waitText("#fork-tree", "(this session)")
	// The fork's own steps ran on the model it was started with: not a
	// fallback.
	if got := b.text(`#timeline .iter[data-n="3"] .switched`); !strings.HasPrefix(got, "· forked onto script:…/repeat-") {
		t.Errorf("the fork's step 3 says %q", got)
	}
	b.shot("fork-page")

	// Another fork of the original at step 1, and a fork of the fork at
	// step 4, both over the API.
	var f2, f3 struct{ ID string }
	post(t, b.url+"/v1/sessions/"+orig+"/fork", fmt.Sprintf(`{"at":1,"model":%q}`, b.repeating(`{"text":"Nothing more to do."}`)), 201, &f2)
	post(t, b.url+"/v1/sessions/"+fork+"/fork", fmt.Sprintf(`{"at":4,"model":%q}`, b.repeating(`{"text":"The fork of the fork is done."}`)), 201, &f3)
	waitEnded(t, b.url, f2.ID)
	waitEnded(t, b.url, f3.ID)

	b.run(chromedp.Navigate(b.url+"/#/s/"+orig), chromedp.WaitVisible(chromedp.CSS(status("completed"))))
	nested := fmt.Sprintf(`#fork-tree li[data-session="%s"] > ul > li[data-session="%s"] > ul > li[data-session="%s"]`, orig, fork, f3.ID)
	b.waitJS("the tree nests the fork of the fork", fmt.Sprintf(`!!document.querySelector(%q) && !!document.querySelector('#fork-tree li[data-session="%s"]')`, nested, f2.ID))
	if tree := b.text("#fork-tree"); !strings.Contains(tree, orig+" (this session)") {
		t.Errorf("the fork tree does not mark this session: %q", tree)
	}
	for id, at := range map[string]int{fork: 2, f2.ID: 1, f3.ID: 4} {
		how := b.text(fmt.Sprintf(`#fork-tree li[data-session="%s"] > .ft-node > .ft-how`, id))
		if !strings.HasPrefix(how, fmt.Sprintf("from step %d", at)) || !strings.HasSuffix(how, "compare with original") {
			t.Errorf("the fork tree says of %s: %q", id, how)
		}
	}
	if n := eval[int](b, `document.querySelectorAll('#fork-tree [data-status="completed"]').length`); n != 4 {
		t.Errorf("the tree shows %d sessions completed, want 4", n)
	}
	b.shot("fork-tree")

	b.run(click(`#fork-tree a[data-compare="` + fork + `"]`))
	b.run(chromedp.WaitVisible(chromedp.CSS("#compare-totals")), chromedp.WaitVisible(chromedp.CSS("#compare-diff")))
	if h := eval[string](b, "location.hash"); h != "#/compare?a="+orig+"&b="+fork {
		t.Errorf("compare with original opened %q", h)
	}
	if got := b.text(`#compare-totals tr[data-row="Forked from"] td:last-child`); got != orig+" at step 2" {
		t.Errorf("B forked from: %q", got)
	}
	if got := b.text(`#compare-totals tr[data-row="Outcome"]`); strings.Count(got, "completed") != 2 {
		t.Errorf("outcomes: %q", got)
	}
	if got := b.text(`#compare-totals tr[data-row="Answer"]`); !strings.Contains(got, "Wrote a.txt and removed b.txt.") || !strings.Contains(got, "Wrote c.txt in the fork.") {
		t.Errorf("answers: %q", got)
	}
	// Steps 1 and 2 are one log, shared; the fork point follows step 2.
	if n := eval[int](b, `document.querySelectorAll("#compare-steps tr.cmp-shared").length`); n != 2 {
		t.Errorf("%d shared steps, want 2", n)
	}
	if got := b.text("#compare-steps tr.cmp-forkpoint"); !strings.Contains(got, "after step 2") {
		t.Errorf("fork point row: %q", got)
	}
	if got := b.text(`#compare-steps tr[data-step="3"] td[data-side="b"]`); !strings.Contains(got, "write_file") {
		t.Errorf("the fork's step 3: %q", got)
	}
	changes := eval[string](b, `[...document.querySelectorAll("#compare-files li")].map(l => l.dataset.path + ":" + l.dataset.change).join(" ")`)
	if changes != "a.txt:modified b.txt:added c.txt:added" {
		t.Errorf("files from A's workspace to B's: %q", changes)
	}
	added := eval[string](b, `[...document.querySelectorAll("#compare-diff .ud-add")].map(d => d.textContent).join("|")`)
	removed := eval[string](b, `[...document.querySelectorAll("#compare-diff .ud-del")].map(d => d.textContent).join("|")`)
	if !strings.Contains(added, "+forked") || !strings.Contains(added, "+two") || !strings.Contains(removed, "-three") {
		t.Errorf("coloured diff lines: added %q, removed %q", added, removed)
	}
	// Added and removed lines are drawn in different colours.
	bg := eval[string](b, `[".ud-add", ".ud-del", ".ud-ctx"].map(s => { const e = document.querySelector("#compare-diff " + s); return e ? getComputedStyle(e).backgroundColor : "none" }).join(" / ")`)
	if parts := strings.Split(bg, " / "); len(parts) != 3 || parts[0] == parts[1] || parts[0] == parts[2] {
		t.Errorf("diff line backgrounds (add / del / context): %s", bg)
	}
	b.shot("compare-fork-with-original")

	// The fork rewound to step 3: its step 4 is set aside, and the
	// compare view shows it greyed, tagged rewound, beside the original's.
	var rw struct {
		Steps []int `json:"rewound_steps"`
	}
	post(t, b.url+"/v1/sessions/"+fork+"/rewind", `{"at":3}`, 200, &rw)
	if len(rw.Steps) != 1 || rw.Steps[0] != 4 {
		t.Fatalf("rewinding the fork to step 3 set aside %v", rw.Steps)
	}
	b.run(chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS(`#compare-steps tr.cmp-rewound[data-step="4"]`)))
	if got := b.text(`#compare-steps tr.cmp-rewound[data-step="4"] td[data-side="b"] .rewound-tag`); got != "rewound" {
		t.Errorf("the fork's rewound step 4 is tagged %q", got)
	}
	if got := b.text(`#compare-totals tr[data-row="Outcome"] td:last-child`); !strings.Contains(got, "paused") {
		t.Errorf("the rewound fork's outcome: %q", got)
	}
	b.shot("compare-with-rewound-step")
	b.run(chromedp.EmulateViewport(390, 800))
	if w := eval[int](b, `document.documentElement.scrollWidth`); w > 400 {
		t.Errorf("the compare view is %d px wide on a 390 px screen", w)
	}
	b.shot("compare-narrow")
}
