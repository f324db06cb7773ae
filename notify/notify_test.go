package notify_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/notify"
	"github.com/agentloop/agentloop/store/sqlite"
)

// A notifier started on a store whose sessions stopped while none ran
// (a crash, a restart) queues the last stop of each: a wait and an end
// are sent, signed, once each; a shutdown's pause is not (the server
// resumes that session itself); a running session is not.
func TestStartCatchesUpOnStoppedSessions(t *testing.T) {
	var mu sync.Mutex
	got := map[string][]string{} // session → kinds received
	more := make(chan struct{}, 10)
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		ts, _ := strconv.ParseInt(r.Header.Get("X-Agentloop-Timestamp"), 10, 64)
		if r.Header.Get("X-Agentloop-Signature") != notify.Sign("k", ts, body) {
			t.Errorf("bad signature on %s", body)
		}
		var p struct {
			Kind, Tenant string
			SessionID    string `json:"session_id"`
		}
		json.Unmarshal(body, &p)
		if p.Tenant != "acme" {
			t.Errorf("tenant %q in %s", p.Tenant, body)
		}
		mu.Lock()
		got[p.SessionID] = append(got[p.SessionID], p.Kind)
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
		more <- struct{}{}
	}))
	defer recv.Close()
	st, err := sqlite.Open(filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	cfg := notify.Config{Store: st, Owner: "t", URL: recv.URL, Secret: "k", AllowPrivate: true, Poll: 20 * time.Millisecond}
	// The server's webhook exists (it hears of what happens after it was
	// made), then sessions stop while no notifier runs.
	if _, err := notify.New(t.Context(), cfg); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	log := func(id string, last loop.Payload) {
		evs := []loop.Event{loop.NewEvent(id, 1, now, &loop.SessionStarted{Task: "t", Model: "m", Tenant: "acme"})}
		if last != nil {
			evs = append(evs, loop.NewEvent(id, 2, now, last))
		}
		if err := st.Append(t.Context(), evs...); err != nil {
			t.Fatal(err)
		}
	}
	log("waits", &loop.SessionWaiting{Reason: loop.ReasonApproval, Question: "Allow?"})
	log("ended", &loop.SessionEnded{Status: loop.StatusCompleted, Reason: loop.ReasonCompleted, Answer: "done"})
	log("shutdown", &loop.SessionPaused{Reason: loop.ReasonShutdown})
	log("running", nil)

	n, err := notify.New(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { n.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }() // before the store closes
	for {
		mu.Lock()
		ok := len(got["waits"]) > 0 && len(got["ended"]) > 0
		mu.Unlock()
		if ok {
			break
		}
		select {
		case <-more:
		case <-time.After(time.Minute):
			t.Fatalf("got %v", got)
		}
	}
	// Everything was queued before the first send: the queue is complete.
	ds, err := st.ListDeliveries(t.Context(), "", true, 100)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]string{}
	for _, d := range ds {
		kinds[d.SessionID] = d.Kind
	}
	if len(ds) != 2 || kinds["waits"] != "waiting" || kinds["ended"] != "ended" {
		t.Errorf("queued: %+v", ds)
	}
}
