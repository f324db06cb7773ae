package web_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/chromedp"

	"github.com/agentloop/agentloop/notify"
	"github.com/agentloop/agentloop/server"
	"github.com/agentloop/agentloop/store/sqlite"
)

// The Notifications card and the browser's notifications: a person opts
// in with the card's button (the browser grants the permission), a
// session started from the page waits for an approval and the page shows
// a notification; the card lists the webhook deliveries, one delivered
// and one whose receiver failed, with its attempts and error.
func TestNotificationsCardAndBrowserNotifications(t *testing.T) {
	ok := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusNoContent)
	}))
	defer ok.Close()
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		http.Error(w, "receiver down for maintenance", http.StatusInternalServerError)
	}))
	defer down.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b := newBrowserWith(t, "ask", func(cfg *server.Config) {
		st := cfg.Keys.(*sqlite.Store)
		// A failed delivery waits an hour for its retry: the card shows it pending.
		n, err := notify.New(ctx, notify.Config{Store: st, Owner: "browser-test", AllowPrivate: true, Backoff: time.Hour, Poll: 50 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() { n.Run(ctx); close(done) }()
		t.Cleanup(func() { cancel(); <-done })
		cfg.Notifier = n
	})
	for _, u := range []string{ok.URL + "/hook", down.URL + "/hook"} {
		resp, err := http.Post(b.url+"/v1/webhooks", "application/json", strings.NewReader(fmt.Sprintf(`{"url":%q}`, u)))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("create webhook: %d", resp.StatusCode)
		}
	}

	// Opt in: the browser asks the person; here its answer is granted.
	if _, err := chromedp.CallBrowser(b.ctx, cdpbrowser.SetPermission, cdpbrowser.SetPermissionParams{
		Permission: &cdpbrowser.PermissionDescriptor{Name: "notifications"}, Setting: cdpbrowser.PermissionSettingGranted, Origin: b.url}); err != nil {
		t.Fatal(err)
	}
	b.run(chromedp.Navigate(b.url+"/#/"), chromedp.WaitVisible(chromedp.CSS("#notifications")))
	if s := b.text("#notify-state"); !strings.HasPrefix(s, "Off") {
		t.Errorf("before opting in: %q", s)
	}
	b.run(click("#notify-optin"), chromedp.WaitVisible(chromedp.CSS("#notify-state")))
	waitText(b, "#notify-state", "On:")

	// A watched session waits for an approval: the page shows one
	// notification (from the session's page, or from the list when the
	// wait came before the page opened).
	b.start("Write a note", b.script(`{"tool_calls":[{"name":"write_file","arguments":{"path":"note.txt","content":"hi"}}]}`, `{"text":"done"}`))
	b.run(chromedp.WaitVisible(chromedp.CSS(status("waiting"))))
	b.run(chromedp.Navigate(b.url+"/#/"), chromedp.WaitVisible(chromedp.CSS("#notifications")))
	waitText(b, "#notify-shown li", "")

	// The deliveries of that wait: one delivered, one failed once.
	b.run(chromedp.WaitVisible(chromedp.CSS(`#deliveries-table [data-status="delivered"]`)), chromedp.WaitVisible(chromedp.CSS(`#deliveries-table [data-status="pending"]`)))
	table := b.text("#deliveries-table")
	if !strings.Contains(table, "waiting") || !strings.Contains(table, "HTTP 500") || !strings.Contains(table, "receiver down for maintenance") {
		t.Errorf("deliveries: %q", table)
	}
	shown, err := chromedp.Run(b.ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("#notify-shown li")].map(li => li.textContent)`))
	if err != nil {
		t.Fatal(err)
	}
	if len(shown) != 1 || !(strings.Contains(shown[0], "needs an approval: Allow write_file") || strings.Contains(shown[0], "waits for you: Write a note")) { // from the session's page, or the list
		t.Errorf("notifications shown: %q, want one of the wait", shown)
	}
	b.shot("notifications-card")
}

// waitText waits until sel's text contains want (and sel exists).
func waitText(b *browser, sel, want string) {
	b.t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		got := b.text(sel)
		if strings.Contains(got, want) && got != "" {
			return
		}
		if time.Now().After(deadline) {
			b.fail(fmt.Errorf("%s says %q, want %q", sel, got, want))
		}
	}
}
