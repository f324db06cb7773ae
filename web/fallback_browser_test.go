package web_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// A session whose model fails for good moves to its fallback model; the
// page says which model did the step.
func TestPageShowsTheFallbackModelsStep(t *testing.T) {
	b := newBrowser(t, "auto")
	failing := b.script(`{"error":{"kind":"retryable","status":429,"message":"rate limited for good"}}`)
	fallback := b.script(`{"text":"hello from the fallback"}`)
	body := fmt.Sprintf(`{"task":"say hi","model":%q,"fallback_models":[%q]}`, failing, fallback)
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
	b.run(chromedp.Navigate(b.url+"/#/s/"+created.ID), chromedp.WaitVisible(chromedp.CSS(status("completed"))), chromedp.WaitVisible(chromedp.CSS(".iter .switched")))
	fb := fallback[strings.LastIndex(fallback, "/")+1:]
	if got := b.text(".iter .switched"); !strings.Contains(got, fb) {
		t.Errorf("the step's model: %q, want the fallback %s", got, fb)
	}
	if got := b.text("#now-on"); !strings.Contains(got, "now on") || !strings.Contains(got, fb) {
		t.Errorf("the header: %q", got)
	}
	b.shot("fallback-model-step")
}
