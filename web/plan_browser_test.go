package web_test

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// The plan card says where the plan is: waiting for the user with the
// session (its current step marked), then completed after the reply sent
// from the page.
func TestPlanCardFollowsThePlansStatus(t *testing.T) {
	b := newBrowser(t, "auto")
	model := b.script(
		`{"tool_calls":[{"name":"update_plan","arguments":{"action":"create","goal":"Two notes","steps":["Write a","Write b"]}}]}`,
		`{"tool_calls":[{"name":"update_plan","arguments":{"action":"update_step","step":1,"status":"in_progress"}},{"name":"write_file","arguments":{"path":"a.txt","content":"a"}}]}`,
		`{"tool_calls":[{"name":"update_plan","arguments":{"action":"wait_for_user","reason":"Which name for note b?"}}]}`,
		`{"tool_calls":[{"name":"update_plan","arguments":{"action":"update_step","step":1,"status":"completed"}},{"name":"write_file","arguments":{"path":"b.txt","content":"b"}}]}`,
		`{"tool_calls":[{"name":"update_plan","arguments":{"action":"update_step","step":2,"status":"completed"}}]}`,
		`{"tool_calls":[{"name":"update_plan","arguments":{"action":"complete"}}]}`,
		`{"text":"Both written."}`)
	b.start("Write two notes", model)
	b.run(chromedp.WaitVisible(chromedp.CSS(status("waiting"))), chromedp.WaitVisible(chromedp.CSS("#plan li.current")))
	if got := b.text("#plan-pct"); !strings.Contains(got, "waiting for user") || !strings.Contains(got, "step 1 of 2") {
		t.Errorf("while waiting: %q", got)
	}
	b.shot("plan-waiting-for-user")
	b.run(chromedp.SendKeys(chromedp.CSS("#reply-text"), "b.txt"), click("#btn-reply"), chromedp.WaitVisible(chromedp.CSS(status("completed"))))
	b.run(chromedp.WaitVisible(chromedp.CSS("#plan-status")))
	if got := b.text("#plan-status"); got != "completed" {
		t.Errorf("at the end: %q", got)
	}
}
