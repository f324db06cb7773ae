// Package notify sends webhooks when sessions stop for a person or end: a
// projection of the event log, like package feed, that never changes how a
// session runs.
//
// What it sends: one POST per target for every committed session.waiting
// (kind "waiting": an approval, a question, a stuck session),
// session.paused (kind "paused"; not the pause of a server shutting down,
// which resumes by itself) and session.ended (kind "ended"). Targets are
// the server's webhook (every tenant), the session's tenant's webhooks,
// and the session's own notify URL.
//
// Guarantees:
//   - At least once: each delivery is queued in the store before it is
//     sent and stays queued until the receiver answers 2xx or the attempts
//     run out; a restart carries on with the queue, and on start the
//     notifier looks again at recently stopped sessions, so an event
//     committed just before a crash is still queued. The same event never
//     queues twice for one target.
//   - Deduplication: X-Agentloop-Delivery (and the body's "id") is the
//     event's session:seq, the same on every attempt and every server.
//   - Authenticity: X-Agentloop-Signature is sha256=HEX, the HMAC-SHA256
//     with the webhook's secret of X-Agentloop-Timestamp, ".", and the
//     exact body.
//   - One sender per delivery in the normal case: a server claims a
//     delivery under a lease before sending it.
//   - A receiver that fails is tried again with a doubling delay; the
//     store records attempts and the last error for the dashboard.
package notify

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/store"
)

// NotifyLabel is the session label that holds a session's own notify URL
// (the start request's "notify").
const NotifyLabel = "agentloop.notify"

// ServerWebhookID is the ID of the server's own webhook (tenant "").
const ServerWebhookID = "server"

// Source is what the notifier reads and queues in: a store with webhooks.
type Source interface {
	LoadAfter(ctx context.Context, sessionID string, after int64) ([]loop.Event, error)
	Watch(fn func(store.Notice)) (stop func())
	List(ctx context.Context, f store.Filter) ([]loop.Summary, error)
	store.Webhooks
}

// Config is what New needs. Store and Owner are required.
type Config struct {
	Store Source
	// Owner names this process in delivery leases.
	Owner string
	// URL and Secret are the server's own webhook, when URL is set.
	// Secret also signs deliveries to sessions' own notify URLs.
	URL, Secret string
	// AllowPrivate lets webhooks reach loopback and private addresses
	// (local use and tests).
	AllowPrivate bool
	// Backoff is the delay before the second attempt; it doubles after
	// each failure, up to an hour (default 5 s).
	Backoff time.Duration
	// MaxAttempts is how many times a delivery is tried (default 12).
	MaxAttempts int
	// Poll is how often the queue is looked at for due retries (default 1 s).
	Poll   time.Duration
	Logger *slog.Logger
	Now    func() time.Time
}

// Notifier queues and sends notifications.
type Notifier struct {
	cfg     Config
	client  *http.Client
	wake    chan struct{}
	notes   chan store.Notice
	mu      sync.Mutex
	started map[string]origin // session → what its session.started says
}

// New prepares the store's tables and records the server's webhook.
func New(ctx context.Context, cfg Config) (*Notifier, error) {
	if cfg.Backoff <= 0 {
		cfg.Backoff = 5 * time.Second
	}
	if cfg.MaxAttempts <= 0 {
		cfg.MaxAttempts = 12
	}
	if cfg.Poll <= 0 {
		cfg.Poll = time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if err := cfg.Store.PrepareWebhooks(ctx); err != nil {
		return nil, err
	}
	if cfg.URL != "" {
		if err := CheckURL(cfg.URL, cfg.AllowPrivate); err != nil {
			return nil, err
		}
		if cfg.Secret == "" {
			return nil, fmt.Errorf("webhook %s: no secret to sign with (--webhook-secret-file or $AGENTLOOP_WEBHOOK_SECRET)", cfg.URL)
		}
		if _, err := cfg.Store.PutWebhook(ctx, store.Webhook{ID: ServerWebhookID, URL: cfg.URL, Secret: cfg.Secret}); err != nil {
			return nil, err
		}
	} else if err := cfg.Store.DeleteWebhook(ctx, "", ServerWebhookID); err != nil && !isNotFound(err) {
		return nil, err
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DialContext = dialer(cfg.AllowPrivate).DialContext
	tr.Proxy = nil
	n := &Notifier{cfg: cfg, wake: make(chan struct{}, 1), notes: make(chan store.Notice, 256), started: map[string]origin{},
		client: &http.Client{Transport: tr, Timeout: 10 * time.Second,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	return n, nil
}

// AllowPrivate reports whether webhooks may reach private addresses.
func (n *Notifier) AllowPrivate() bool { return n.cfg.AllowPrivate }

// SignsSessions reports whether sessions' own notify URLs can be signed.
func (n *Notifier) SignsSessions() bool { return n.cfg.Secret != "" }

// Store is where webhooks and deliveries are kept.
func (n *Notifier) Store() store.Webhooks { return n.cfg.Store }

// Run follows the log and sends until ctx ends.
func (n *Notifier) Run(ctx context.Context) {
	var missed sync.Mutex
	lost := false
	stop := n.cfg.Store.Watch(func(no store.Notice) {
		if no.Events == nil || !relevant(no.Events) {
			return // another server's commit is that server's to queue
		}
		select {
		case n.notes <- no:
		default:
			missed.Lock()
			lost = true
			missed.Unlock()
		}
	})
	defer stop()
	n.catchUp(ctx)
	go n.send(ctx)
	for {
		select {
		case <-ctx.Done():
			return
		case no := <-n.notes:
			n.queue(ctx, no.Events)
		}
		missed.Lock()
		again := lost
		lost = false
		missed.Unlock()
		if again {
			n.catchUp(ctx)
		}
	}
}

func relevant(evs []loop.Event) bool {
	for _, ev := range evs {
		if kind(ev) != "" {
			return true
		}
	}
	return false
}

// kind is what an event notifies of, "" for nothing.
func kind(ev loop.Event) string {
	switch d := ev.Data.(type) {
	case *loop.SessionWaiting:
		return "waiting"
	case *loop.SessionPaused:
		if d.Reason == loop.ReasonShutdown {
			return "" // the server resumes it as it starts
		}
		return "paused"
	case *loop.SessionEnded:
		return "ended"
	}
	return ""
}

// catchUp queues the last event of sessions that stopped lately: what a
// crash between commit and queueing, or a full notice buffer, left out.
func (n *Notifier) catchUp(ctx context.Context) {
	since := n.cfg.Now().Add(-24 * time.Hour)
	sums, err := n.cfg.Store.List(ctx, store.Filter{Limit: 500})
	if err != nil {
		n.cfg.Logger.Warn("notifications: list sessions to catch up", "err", err)
		return
	}
	for _, s := range sums {
		if s.Status == loop.StatusRunning || s.UpdatedAt.Before(since) || s.LastSeq < 1 {
			continue
		}
		evs, err := n.cfg.Store.LoadAfter(ctx, s.ID, s.LastSeq-1)
		if err != nil {
			n.cfg.Logger.Warn("notifications: catch up", "session", s.ID, "err", err)
			continue
		}
		n.queue(ctx, evs)
	}
}

// payload is the body of a notification.
type payload struct {
	ID        string    `json:"id"`
	Kind      string    `json:"kind"`
	Type      string    `json:"type"`
	SessionID string    `json:"session_id"`
	Tenant    string    `json:"tenant,omitempty"`
	Seq       int64     `json:"seq"`
	Time      time.Time `json:"time"`
	Reason    string    `json:"reason,omitempty"`
	Status    string    `json:"status,omitempty"`
	Question  string    `json:"question,omitempty"`
	Detail    string    `json:"detail,omitempty"`
	Answer    string    `json:"answer,omitempty"`
}

// queue queues a delivery per target for each event of evs that
// notifies. The session's tenant and notify URL come from its own
// session.started, not from the notice: not every store's notices name
// the tenant.
func (n *Notifier) queue(ctx context.Context, evs []loop.Event) {
	var ds []store.Delivery
	for _, ev := range evs {
		k := kind(ev)
		if k == "" {
			continue
		}
		o, err := n.origin(ctx, ev.SessionID)
		if err != nil {
			n.cfg.Logger.Warn("notifications: read session", "session", ev.SessionID, "err", err)
			continue
		}
		tenant := o.tenant
		p := payload{ID: fmt.Sprintf("%s:%d", ev.SessionID, ev.Seq), Kind: k, Type: string(ev.Type), SessionID: ev.SessionID, Tenant: tenant, Seq: ev.Seq, Time: ev.Time}
		switch d := ev.Data.(type) {
		case *loop.SessionWaiting:
			p.Reason, p.Question = string(d.Reason), d.Question
		case *loop.SessionPaused:
			p.Reason, p.Detail = string(d.Reason), d.Detail
		case *loop.SessionEnded:
			p.Reason, p.Status, p.Detail, p.Answer = string(d.Reason), string(d.Status), d.Detail, d.Answer
		}
		body, err := json.Marshal(p)
		if err != nil {
			continue
		}
		hooks, err := n.cfg.Store.ListWebhooks(ctx, tenant, false)
		if err != nil {
			n.cfg.Logger.Warn("notifications: webhooks", "tenant", tenant, "err", err)
			continue
		}
		if tenant != "" {
			server, err := n.cfg.Store.ListWebhooks(ctx, "", false)
			if err != nil {
				n.cfg.Logger.Warn("notifications: webhooks", "err", err)
				continue
			}
			hooks = append(hooks, server...)
		}
		for _, h := range hooks {
			if h.Tenant != tenant && h.ID != ServerWebhookID {
				continue // another tenant's: only the server's hears every tenant
			}
			if ev.Time.Before(h.CreatedAt) {
				continue // a webhook hears of what happens after it was made
			}
			ds = append(ds, store.Delivery{ID: h.Tenant + "/" + h.ID + "|" + p.ID, EventID: p.ID, Tenant: tenant, SessionID: ev.SessionID,
				Kind: k, WebhookID: h.ID, URL: h.URL, Secret: h.Secret, Body: body})
		}
		if o.url != "" && n.cfg.Secret != "" {
			ds = append(ds, store.Delivery{ID: "session|" + p.ID, EventID: p.ID, Tenant: tenant, SessionID: ev.SessionID,
				Kind: k, URL: o.url, Secret: n.cfg.Secret, Body: body})
		}
	}
	if len(ds) == 0 {
		return
	}
	if err := n.cfg.Store.EnqueueDeliveries(ctx, ds); err != nil {
		n.cfg.Logger.Error("notifications: queue", "err", err)
		return
	}
	select {
	case n.wake <- struct{}{}:
	default:
	}
}

// origin is what a session's session.started says about where its
// notifications go.
type origin struct {
	tenant string
	url    string // the session's own notify URL, "" for none
}

// origin reads a session's session.started once and remembers it.
func (n *Notifier) origin(ctx context.Context, id string) (origin, error) {
	n.mu.Lock()
	o, ok := n.started[id]
	n.mu.Unlock()
	if ok {
		return o, nil
	}
	evs, err := n.cfg.Store.LoadAfter(ctx, id, 0)
	if err != nil {
		return o, err
	}
	if len(evs) == 0 {
		return o, fmt.Errorf("session %s has no events", id)
	}
	s, ok := evs[0].Data.(*loop.SessionStarted)
	if !ok {
		return o, fmt.Errorf("session %s begins with %s, not session.started", id, evs[0].Type)
	}
	o = origin{tenant: s.Tenant, url: s.Labels[NotifyLabel]}
	n.mu.Lock()
	if len(n.started) > 10000 {
		clear(n.started)
	}
	n.started[id] = o
	n.mu.Unlock()
	return o, nil
}

// lease is how long a claimed delivery is this server's: longer than
// one attempt can take.
const lease = time.Minute

func (n *Notifier) send(ctx context.Context) {
	t := time.NewTicker(n.cfg.Poll)
	defer t.Stop()
	for {
		for {
			ds, err := n.cfg.Store.ClaimDeliveries(ctx, n.cfg.Owner, n.cfg.Now(), lease, 8)
			if err != nil {
				if ctx.Err() == nil {
					n.cfg.Logger.Warn("notifications: claim", "err", err)
				}
				break
			}
			var wg sync.WaitGroup
			for _, d := range ds {
				wg.Go(func() { n.attempt(ctx, d) })
			}
			wg.Wait()
			if len(ds) < 8 {
				break
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-n.wake:
		}
	}
}

// Sign returns the X-Agentloop-Signature value for body sent at ts.
func Sign(secret string, ts int64, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(strconv.FormatInt(ts, 10)))
	m.Write([]byte("."))
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

func (n *Notifier) attempt(ctx context.Context, d store.Delivery) {
	err := n.post(ctx, d)
	if ctx.Err() != nil {
		return // stopping: the lease runs out and the delivery is tried again
	}
	d.Attempts++
	switch {
	case err == nil:
		d.Status, d.LastError = store.DeliveryDelivered, ""
	case d.Attempts >= n.cfg.MaxAttempts:
		d.Status, d.LastError = store.DeliveryFailed, err.Error()
	default:
		d.Status, d.LastError = store.DeliveryPending, err.Error()
		d.NextAt = n.cfg.Now().Add(min(n.cfg.Backoff<<(d.Attempts-1), time.Hour))
	}
	if _, ferr := n.cfg.Store.FinishAttempt(context.WithoutCancel(ctx), n.cfg.Owner, d); ferr != nil {
		n.cfg.Logger.Warn("notifications: record attempt", "delivery", d.ID, "err", ferr)
	}
	if err != nil {
		n.cfg.Logger.Warn("notification not delivered", "url", d.URL, "event", d.EventID, "attempt", d.Attempts, "err", err)
	}
}

func (n *Notifier) post(ctx context.Context, d store.Delivery) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.URL, bytes.NewReader(d.Body))
	if err != nil {
		return err
	}
	ts := n.cfg.Now().Unix()
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "agentloop-webhook")
	req.Header.Set("X-Agentloop-Delivery", d.EventID)
	req.Header.Set("X-Agentloop-Event", d.Kind)
	req.Header.Set("X-Agentloop-Timestamp", strconv.FormatInt(ts, 10))
	req.Header.Set("X-Agentloop-Signature", Sign(d.Secret, ts, d.Body))
	resp, err := n.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 200))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("HTTP %d from %s: %s", resp.StatusCode, d.URL, bytes.TrimSpace(msg))
	}
	return nil
}
