package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentloop/agentloop/assemble"
	"github.com/agentloop/agentloop/model/price"
	"github.com/agentloop/agentloop/notify"
	"github.com/agentloop/agentloop/server"
	"github.com/agentloop/agentloop/service"
	"github.com/agentloop/agentloop/store/sqlite"
)

// hookReceiver is a webhook receiver on loopback that checks every
// signature and answers 500 to the first fail requests of each delivery id.
type hookReceiver struct {
	t      testing.TB
	secret string
	fail   int
	mu     sync.Mutex
	got    []hookCall
	tries  map[string]int
	more   chan struct{}
	srv    *httptest.Server
}

type hookCall struct {
	ID, Kind, Session, Reason, Status string
	Seq                               int64
	Answered                          int
}

func newReceiver(t testing.TB, secret string, fail int) *hookReceiver {
	h := &hookReceiver{t: t, secret: secret, fail: fail, tries: map[string]int{}, more: make(chan struct{}, 100)}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		ts, err := strconv.ParseInt(r.Header.Get("X-Agentloop-Timestamp"), 10, 64)
		if err != nil || r.Header.Get("X-Agentloop-Signature") != notify.Sign(h.secret, ts, body) {
			t.Errorf("bad signature %q for %s", r.Header.Get("X-Agentloop-Signature"), body)
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		var p struct {
			ID, Kind, Reason, Status string
			SessionID                string `json:"session_id"`
			Seq                      int64
		}
		if err := json.Unmarshal(body, &p); err != nil || p.ID != r.Header.Get("X-Agentloop-Delivery") || p.ID != fmt.Sprintf("%s:%d", p.SessionID, p.Seq) {
			t.Errorf("delivery id %q does not match body %s", r.Header.Get("X-Agentloop-Delivery"), body)
		}
		h.mu.Lock()
		h.tries[p.ID]++
		n := h.tries[p.ID]
		code := http.StatusNoContent
		if n <= h.fail {
			code = http.StatusInternalServerError
		}
		h.got = append(h.got, hookCall{ID: p.ID, Kind: p.Kind, Session: p.SessionID, Reason: p.Reason, Status: p.Status, Seq: p.Seq, Answered: code})
		h.mu.Unlock()
		w.WriteHeader(code)
		h.more <- struct{}{}
	}))
	t.Cleanup(h.srv.Close)
	return h
}

// await waits until a call matching ok has been answered 2xx, and returns
// every call for that id.
func (h *hookReceiver) await(what string, ok func(hookCall) bool) []hookCall {
	h.t.Helper()
	for {
		h.mu.Lock()
		var done string
		for _, c := range h.got {
			if ok(c) && c.Answered/100 == 2 {
				done = c.ID
			}
		}
		var calls []hookCall
		for _, c := range h.got {
			if done != "" && c.ID == done {
				calls = append(calls, c)
			}
		}
		h.mu.Unlock()
		if done != "" {
			return calls
		}
		select {
		case <-h.more:
		case <-time.After(time.Until(deadline(h.t))):
			h.t.Fatalf("no %s notification arrived; got %+v", what, h.got)
		}
	}
}

func deadline(t testing.TB) time.Time {
	if d, ok := t.(interface{ Deadline() (time.Time, bool) }); ok {
		if d, ok := d.Deadline(); ok {
			return d.Add(-10 * time.Second)
		}
	}
	return time.Now().Add(5 * time.Minute)
}

// hookAPI serves a real API over loopback with a notifier configured by
// nc (its store and owner filled in), on the store at dir.
func hookAPI(t *testing.T, dir string, nc notify.Config) (*api, func()) {
	t.Helper()
	st, err := sqlite.Open(filepath.Join(dir, "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	workspaces := &server.Workspaces{}
	resolver := &assemble.Resolver{OnWorkspace: workspaces.Track}
	ctx, cancel := context.WithCancel(context.Background())
	svc, err := service.New(service.Config{Store: st, Runner: resolver.RunnerConfig(st, price.Default()), OnFailed: func(id string, err error) { t.Logf("session %s failed: %v", id, err) }})
	if err != nil {
		t.Fatal(err)
	}
	ws := filepath.Join(dir, "ws")
	os.MkdirAll(ws, 0o700)
	nc.Store, nc.Owner, nc.AllowPrivate = st, "test-"+dir, true
	if nc.Backoff == 0 {
		nc.Backoff = 20 * time.Millisecond
	}
	nc.Poll = 20 * time.Millisecond
	n, err := notify.New(ctx, nc)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { n.Run(ctx); close(done) }()
	h := server.New(server.Config{Service: svc, Keys: st, RequireKeys: true, Workspaces: workspaces, Notifier: n,
		Defaults: server.Defaults{Approval: "auto", Workspaces: ws, AllowScripts: true, Model: "script:" + script(t, dir, "hello")}})
	srv := httptest.NewServer(h)
	a := &api{t: t, url: srv.URL, st: st, dir: dir, keys: map[string]string{}}
	for _, k := range []struct{ tenant, role string }{{"acme", "operator"}, {"acme", "viewer"}, {"globex", "admin"}} {
		key, rec, err := server.NewKey(k.tenant, k.role, "test", time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if err := st.CreateKey(t.Context(), rec); err != nil {
			t.Fatal(err)
		}
		a.keys[k.role+"@"+k.tenant] = key
	}
	var once sync.Once
	stop := func() {
		once.Do(func() {
			srv.Close()
			cancel()
			<-done
			svc.Close()
			st.Close()
		})
	}
	t.Cleanup(stop)
	return a, stop
}

// slowSteps keep a session running long enough to be paused.
var slowSteps = strings.Split(strings.Repeat("300ms,", 30)+"300ms", ",")

func TestWebhooksDeliverSignedNotificationsOfWaitingPausedAndEnded(t *testing.T) {
	server := newReceiver(t, "server-secret", 0)
	tenant := newReceiver(t, "", 0)
	a, _ := hookAPI(t, t.TempDir(), notify.Config{URL: server.srv.URL, Secret: "server-secret"})
	op := a.keys["operator@acme"]

	// A tenant's webhook: its secret is answered once, never listed.
	code, out, _ := a.do("POST", "/v1/webhooks", op, fmt.Sprintf(`{"url":%q}`, tenant.srv.URL))
	if code != http.StatusCreated {
		t.Fatalf("create webhook: %d %s", code, out)
	}
	var hook struct{ ID, Secret string }
	json.Unmarshal([]byte(out), &hook)
	tenant.mu.Lock()
	tenant.secret = hook.Secret
	tenant.mu.Unlock()
	if hook.Secret == "" || !strings.HasPrefix(hook.ID, "wh_") {
		t.Fatalf("created webhook: %s", out)
	}
	if _, out, _ := a.do("GET", "/v1/webhooks", op, ""); !strings.Contains(out, hook.ID) || strings.Contains(out, hook.Secret) {
		t.Errorf("list: %s", out)
	}
	// Another tenant sees none of it; a viewer may not manage webhooks.
	if _, out, _ := a.do("GET", "/v1/webhooks", a.keys["admin@globex"], ""); strings.Contains(out, hook.ID) {
		t.Errorf("globex sees acme's webhook: %s", out)
	}
	if code, _, _ := a.do("GET", "/v1/webhooks", a.keys["viewer@acme"], ""); code != http.StatusForbidden {
		t.Errorf("viewer: %d", code)
	}

	// Waiting for an approval, then ended after it.
	ask := filepath.Join(a.dir, "ask.json")
	os.WriteFile(ask, []byte(`{"steps":[{"tool_calls":[{"name":"write_file","arguments":{"path":"a.txt","content":"a"}}]},{"text":"done"}]}`), 0o600)
	id := a.create(op, fmt.Sprintf(`{"task":"write","model":"script:%s","approval":"ask"}`, ask))
	for _, h := range []*hookReceiver{server, tenant} {
		h.await("waiting", func(c hookCall) bool { return c.Session == id && c.Kind == "waiting" && c.Reason == "approval" })
	}
	// Paused by a person.
	slow := a.create(op, fmt.Sprintf(`{"task":"slow","model":"script:%s"}`, script(t, a.dir, "late", slowSteps...)))
	a.waitStatus(op, slow, "running")
	if code, out, _ := a.do("POST", "/v1/sessions/"+slow+"/pause", op, ""); code/100 != 2 {
		t.Fatalf("pause: %d %s", code, out)
	}
	server.await("paused", func(c hookCall) bool { return c.Session == slow && c.Kind == "paused" })
	if code, out, _ := a.do("POST", "/v1/sessions/"+slow+"/terminate", op, ""); code/100 != 2 {
		t.Fatalf("terminate: %d %s", code, out)
	}
	ended := tenant.await("ended", func(c hookCall) bool { return c.Session == slow && c.Kind == "ended" })
	if ended[0].Status != "terminated" {
		t.Errorf("ended: %+v, want status terminated", ended[0])
	}

	server.await("ended", func(c hookCall) bool { return c.Session == slow && c.Kind == "ended" })

	// The dashboard's list of deliveries: each recorded as delivered once
	// its receiver answered (the record follows the answer).
	for kinds := map[string]int{}; kinds["waiting"] < 2 || kinds["paused"] < 2 || kinds["ended"] < 2; {
		_, out, _ = a.do("GET", "/v1/webhooks/deliveries", op, "")
		var list struct {
			Deliveries []struct{ Status, Kind string }
		}
		json.Unmarshal([]byte(out), &list)
		clear(kinds)
		for _, d := range list.Deliveries {
			if d.Status == "delivered" {
				kinds[d.Kind]++
			}
		}
		select {
		case <-time.After(10 * time.Millisecond):
		case <-time.After(time.Until(deadline(t))):
			t.Fatalf("deliveries never all delivered: %s", out)
		}
	}
	if _, out, _ := a.do("GET", "/v1/webhooks/deliveries", a.keys["admin@globex"], ""); strings.Contains(out, id) {
		t.Errorf("globex sees acme's deliveries: %s", out)
	}
	if code, _, _ := a.do("DELETE", "/v1/webhooks/"+hook.ID, a.keys["admin@globex"], ""); code != http.StatusNotFound {
		t.Errorf("globex deleted acme's webhook: %d", code)
	}
	if code, _, _ := a.do("DELETE", "/v1/webhooks/"+hook.ID, op, ""); code != http.StatusNoContent {
		t.Errorf("delete: %d", code)
	}
}

func TestWebhooksRetryWithTheSameIDAndSurviveARestart(t *testing.T) {
	recv := newReceiver(t, "s3cret", 2)
	dir := t.TempDir()
	// The first server waits an hour after a failure: it is stopped with
	// the delivery queued for a retry.
	a, stop := hookAPI(t, dir, notify.Config{Secret: "s3cret", Backoff: time.Hour})
	op := a.keys["operator@acme"]
	// A session's own notify URL: signed with the server's secret.
	id := a.create(op, fmt.Sprintf(`{"task":"hi","notify":%q}`, recv.srv.URL+"/mine"))
	a.waitStatus(op, id, "completed")
	event := id + ":" + strconv.FormatInt(lastSeq(t, a, op, id), 10)
	d := awaitDelivery(t, a, op, func(d delivery) bool { return d.Attempts == 1 })
	if d.Status != "pending" || d.EventID != event || !strings.Contains(d.LastError, "HTTP 500") {
		t.Errorf("after one failure: %+v", d)
	}
	stop()
	// Restarted two hours later, on the same database: the retry is due.
	later := func() time.Time { return time.Now().Add(2 * time.Hour) }
	b, _ := hookAPI(t, dir, notify.Config{Secret: "s3cret", Now: later})
	calls := recv.await("ended", func(c hookCall) bool { return c.Session == id && c.Kind == "ended" })
	if len(calls) != 3 || calls[0].Answered != 500 || calls[1].Answered != 500 {
		t.Errorf("calls for one event: %+v (want two 500s, then delivered)", calls)
	}
	for _, c := range calls {
		if c.ID != event {
			t.Errorf("a retry changed the id: %+v, want %s", calls, event)
		}
	}
	// The API shows the attempts once the last one is recorded.
	d = awaitDelivery(t, b, op, func(d delivery) bool { return d.Status == "delivered" })
	if d.Attempts != 3 || d.EventID != event || d.LastError != "" {
		t.Errorf("delivered: %+v", d)
	}
}

type delivery struct {
	EventID   string `json:"event_id"`
	Status    string
	LastError string `json:"last_error"`
	Attempts  int
}

// awaitDelivery polls the one delivery of the tenant until ok holds.
func awaitDelivery(t *testing.T, a *api, key string, ok func(delivery) bool) delivery {
	t.Helper()
	for {
		_, out, _ := a.do("GET", "/v1/webhooks/deliveries", key, "")
		var list struct{ Deliveries []delivery }
		json.Unmarshal([]byte(out), &list)
		if len(list.Deliveries) > 1 {
			t.Fatalf("deliveries: %s", out)
		}
		if len(list.Deliveries) == 1 && ok(list.Deliveries[0]) {
			return list.Deliveries[0]
		}
		select {
		case <-time.After(10 * time.Millisecond):
		case <-time.After(time.Until(deadline(t))):
			t.Fatalf("delivery never got there: %s", out)
		}
	}
}

func lastSeq(t *testing.T, a *api, key, id string) int64 {
	_, out, _ := a.do("GET", "/v1/sessions/"+id, key, "")
	var s struct {
		LastSeq int64 `json:"seq"`
	}
	json.Unmarshal([]byte(out), &s)
	return s.LastSeq
}

func TestWebhooksRefuseBadURLs(t *testing.T) {
	a := newAPI(t, true)
	op := a.keys["operator@acme"]
	// A server without notifications refuses a notify URL, saying why.
	code, out, _ := a.do("POST", "/v1/sessions", op, `{"task":"t","notify":"https://example.com/hook"}`)
	if code != http.StatusBadRequest || !strings.Contains(out, "--webhook-secret-file") {
		t.Errorf("notify without a secret: %d %s", code, out)
	}
	b, _ := hookAPI(t, t.TempDir(), notify.Config{Secret: "s3cret"})
	for _, body := range []string{`{"task":"t","notify":"ftp://example.com/x"}`, `{"task":"t","notify":"not a url"}`, `{"task":"t","labels":{"agentloop.notify":"http://example.com"}}`} {
		if code, out, _ := b.do("POST", "/v1/sessions", b.keys["operator@acme"], body); code != http.StatusBadRequest || !strings.Contains(out, "notify") {
			t.Errorf("%s: %d %s", body, code, out)
		}
	}
	if code, out, _ := b.do("POST", "/v1/webhooks", b.keys["operator@acme"], `{"url":"gopher://x"}`); code != http.StatusBadRequest || !strings.Contains(out, "http://") {
		t.Errorf("bad webhook: %d %s", code, out)
	}
	for _, u := range []string{"http://127.0.0.1:9/x", "http://localhost/x", "http://10.1.2.3/x", "http://[::1]/x", "http://169.254.169.254/latest"} {
		if err := notify.CheckURL(u, false); err == nil || !strings.Contains(err.Error(), "refused") {
			t.Errorf("%s: %v", u, err)
		}
		if err := notify.CheckURL(u, true); err != nil {
			t.Errorf("%s with private allowed: %v", u, err)
		}
	}
	if err := notify.CheckURL("https://hooks.example.com/x", false); err != nil {
		t.Error(err)
	}
}
