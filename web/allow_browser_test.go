package web_test

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// From the page: "Allow for this session" lets the same call run unasked
// later, the allowance is listed with a Revoke button, and after revoking
// the call asks again.
func TestAllowForTheSessionFromThePage(t *testing.T) {
	b := newBrowser(t, "ask")
	write := func(name string) string {
		return `{"tool_calls":[{"name":"write_file","arguments":{"path":"` + name + `","content":"x"}}]}`
	}
	b.start("Write the files", b.script(write("a.txt"), write("a.txt"), write("b.txt"), write("a.txt"), `{"text":"done"}`))
	b.run(click("#btn-approve-session"), chromedp.WaitVisible(chromedp.CSS("#allowed li")))
	// a.txt's second call ran unasked: the next approval is b.txt's.
	b.run(chromedp.WaitVisible(chromedp.CSS(`#approval`)))
	for i := 0; i < 200 && !strings.Contains(b.text("#approval-args"), "b.txt"); i++ {
		b.run(chromedp.Sleep(50e6))
	}
	if args := b.text("#approval-args"); !strings.Contains(args, "b.txt") {
		t.Fatalf("the approval after allowing a.txt is for %s", args)
	}
	if got := b.text("#allowed"); !strings.Contains(got, "write_file") || !strings.Contains(got, "a.txt") {
		t.Errorf("allowed card: %q", got)
	}
	b.shot("allowed-for-the-session")
	b.run(click("#allowed [data-revoke]"))
	b.run(chromedp.WaitNotPresent(chromedp.CSS("#allowed")))
	b.run(click("#btn-approve"))
	for i := 0; i < 200 && !strings.Contains(b.text("#approval-args"), "a.txt"); i++ {
		b.run(chromedp.Sleep(50e6))
	}
	if args := b.text("#approval-args"); !strings.Contains(args, "a.txt") {
		t.Fatalf("after the revoke, a.txt did not ask again: %s", args)
	}
	b.run(click("#btn-approve"), chromedp.WaitVisible(chromedp.CSS(status("completed"))))
}
