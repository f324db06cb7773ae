package web_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// A session whose checks partly pass offers a follow-up on its page;
// started there with another model, it opens on the follow-up's page,
// which links back, and the first session's page lists it.
func TestFollowUpFromThePage(t *testing.T) {
	b := newBrowser(t, "auto")
	first := b.script(`{"tool_calls":[{"name":"write_file","arguments":{"path":"a.txt","content":"a"}}]}`, `{"text":"Wrote a.txt."}`)
	body := fmt.Sprintf(`{"task":"Write a.txt and b.txt","model":%q,"max_iterations":2,"verify":["test -f a.txt","test -f b.txt"]}`, first)
	resp, err := http.Post(b.url+"/v1/sessions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	var created struct{ ID, Detail string }
	json.NewDecoder(resp.Body).Decode(&created)
	resp.Body.Close()
	if resp.StatusCode != 201 {
		t.Fatalf("create: %d %s", resp.StatusCode, created.Detail)
	}
	second := b.script(`{"tool_calls":[{"name":"write_file","arguments":{"path":"b.txt","content":"b"}}]}`, `{"text":"Wrote b.txt."}`)

	b.run(chromedp.Navigate(b.url+"/#/s/"+created.ID), chromedp.WaitVisible(chromedp.CSS(status("failed"))), chromedp.WaitVisible(chromedp.CSS("#btn-follow-up")))
	if v := b.text("#verification h2"); v != "Verification: partial_pass" {
		t.Errorf("verification card %q", v)
	}
	b.shot("follow-up-offered")
	b.run(chromedp.SetValue(chromedp.CSS("#follow-up-model"), second), click("#btn-follow-up"),
		chromedp.WaitVisible(chromedp.CSS("#follow-up-of")), chromedp.WaitVisible(chromedp.CSS(status("completed"))))
	if got := b.text("#follow-up-of"); got != "Follow-up of "+created.ID {
		t.Errorf("the follow-up's page says %q", got)
	}
	if v := b.text("#verification h2"); v != "Verification: pass" {
		t.Errorf("the follow-up's verification %q", v)
	}
	b.shot("follow-up-completed")
	if _, err := os.Stat(filepath.Join(b.dir, "ws", created.ID, "b.txt")); err != nil {
		t.Errorf("the follow-up did not work in the first session's workspace: %v", err)
	}
	b.run(chromedp.Navigate(b.url+"/#/s/"+created.ID), chromedp.WaitVisible(chromedp.CSS("#follow-ups a")))
	if got := b.text("#follow-ups"); !strings.Contains(got, "(completed)") {
		t.Errorf("the first session's follow-ups: %q", got)
	}
}
