package storetest

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/agentloop/agentloop/store"
)

// WebhookStore is a store that keeps webhooks and their deliveries.
type WebhookStore interface {
	store.Store
	store.Webhooks
}

// Webhooks runs the webhook conformance tests against stores made by open
// (each a new, empty one).
func Webhooks(t *testing.T, open func(t *testing.T) WebhookStore) {
	prepared := func(t *testing.T) WebhookStore {
		st := open(t)
		for range 2 { // preparing again changes nothing
			if err := st.PrepareWebhooks(t.Context()); err != nil {
				t.Fatal(err)
			}
		}
		return st
	}
	t.Run("Webhooks", func(t *testing.T) { testWebhooks(t, prepared(t)) })
	t.Run("DeliveryQueue", func(t *testing.T) { testDeliveryQueue(t, prepared(t)) })
	t.Run("QueueBesideAppends", func(t *testing.T) { testQueueBesideAppends(t, prepared(t)) })
}

// testWebhooks: tenants see their own webhooks; a replaced one keeps its
// creation time; deleting another tenant's is ErrNotFound.
func testWebhooks(t *testing.T, st WebhookStore) {
	ctx := t.Context()
	a, err := st.PutWebhook(ctx, store.Webhook{ID: "wh_a", Tenant: "acme", URL: "https://a.example/1", Secret: "sa", CreatedAt: at(1)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.PutWebhook(ctx, store.Webhook{ID: "wh_g", Tenant: "globex", URL: "https://g.example", Secret: "sg", CreatedAt: at(2)}); err != nil {
		t.Fatal(err)
	}
	b, err := st.PutWebhook(ctx, store.Webhook{ID: "wh_a", Tenant: "acme", URL: "https://a.example/2", Secret: "sa2", CreatedAt: at(3)})
	if err != nil {
		t.Fatal(err)
	}
	if !b.CreatedAt.Equal(a.CreatedAt) || !b.CreatedAt.Equal(at(1)) {
		t.Errorf("replaced webhook created at %v, want %v", b.CreatedAt, at(1))
	}
	hooks, err := st.ListWebhooks(ctx, "acme", false)
	if err != nil || len(hooks) != 1 || hooks[0].URL != "https://a.example/2" || hooks[0].Secret != "sa2" || hooks[0].Tenant != "acme" {
		t.Errorf("acme's webhooks: %+v %v", hooks, err)
	}
	if all, err := st.ListWebhooks(ctx, "", true); err != nil || len(all) != 2 || all[0].ID != "wh_a" || all[1].ID != "wh_g" {
		t.Errorf("every webhook, oldest first: %+v %v", all, err)
	}
	if err := st.DeleteWebhook(ctx, "globex", "wh_a"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("globex deletes acme's webhook: %v, want ErrNotFound", err)
	}
	if err := st.DeleteWebhook(ctx, "acme", "wh_a"); err != nil {
		t.Error(err)
	}
	if hooks, _ := st.ListWebhooks(ctx, "acme", false); len(hooks) != 0 {
		t.Errorf("after delete: %+v", hooks)
	}
}

func delivery(id, tenant string) store.Delivery {
	return store.Delivery{ID: "target|" + id, EventID: id, Tenant: tenant, SessionID: "s", Kind: "ended",
		WebhookID: "wh", URL: "https://hooks.example/" + id, Secret: "secret-" + id, Body: []byte(`{"id":"` + id + `"}`)}
}

// testDeliveryQueue: enqueueing twice adds nothing; a claim is a lease
// only its owner can finish; a failed attempt waits for its next time; a
// lease that runs out lets another owner claim the delivery.
func testDeliveryQueue(t *testing.T, st WebhookStore) {
	ctx := t.Context()
	if err := st.EnqueueDeliveries(ctx, []store.Delivery{delivery("s:1", "acme"), delivery("s:2", "acme")}); err != nil {
		t.Fatal(err)
	}
	if err := st.EnqueueDeliveries(ctx, []store.Delivery{delivery("s:1", "acme"), delivery("x:1", "globex")}); err != nil {
		t.Fatal(err)
	}
	now := time.Now().Add(time.Minute).Truncate(time.Millisecond) // past every delivery's first time; PostgreSQL keeps microseconds
	got, err := st.ClaimDeliveries(ctx, "A", now, time.Minute, 8)
	if err != nil || len(got) != 3 {
		t.Fatalf("claim: %d deliveries, %v; want 3", len(got), err)
	}
	byID := map[string]store.Delivery{}
	for _, d := range got {
		byID[d.EventID] = d
		want := delivery(d.EventID, d.Tenant)
		if d.ID != want.ID || d.Secret != want.Secret || string(d.Body) != string(want.Body) || d.URL != want.URL ||
			d.Status != store.DeliveryPending || d.Attempts != 0 || d.Kind != "ended" || d.WebhookID != "wh" {
			t.Errorf("claimed %+v, want %+v", d, want)
		}
	}
	if again, err := st.ClaimDeliveries(ctx, "B", now, time.Minute, 8); err != nil || len(again) != 0 {
		t.Errorf("B claims what A holds: %+v %v", again, err)
	}
	d1, d2 := byID["s:1"], byID["s:2"]
	d1.Attempts, d1.Status = 1, store.DeliveryDelivered
	if held, err := st.FinishAttempt(ctx, "B", d1); err != nil || held {
		t.Errorf("B finishes A's delivery: %v %v", held, err)
	}
	if held, err := st.FinishAttempt(ctx, "A", d1); err != nil || !held {
		t.Errorf("A finishes its delivery: %v %v", held, err)
	}
	d2.Attempts, d2.Status, d2.LastError, d2.NextAt = 1, store.DeliveryPending, "HTTP 500", now.Add(time.Hour)
	if held, err := st.FinishAttempt(ctx, "A", d2); err != nil || !held {
		t.Errorf("A records a failure: %v %v", held, err)
	}
	x := byID["x:1"] // A "dies" holding x:1
	if got, err := st.ClaimDeliveries(ctx, "B", now.Add(30*time.Second), time.Minute, 8); err != nil || len(got) != 0 {
		t.Errorf("claim before the retry is due and the lease runs out: %+v %v", got, err)
	}
	later := now.Add(2 * time.Hour)
	got, err = st.ClaimDeliveries(ctx, "B", later, time.Minute, 8)
	if err != nil || len(got) != 2 {
		t.Fatalf("claim once the retry is due and A's lease ran out: %+v %v", got, err)
	}
	for _, d := range got {
		if d.EventID == "s:2" && (d.Attempts != 1 || d.LastError != "HTTP 500") {
			t.Errorf("the retried delivery: %+v", d)
		}
	}
	x.Attempts, x.Status = 1, store.DeliveryDelivered
	if held, err := st.FinishAttempt(ctx, "A", x); err != nil || held {
		t.Errorf("A finishes after its lease ran out and B claimed: %v %v", held, err)
	}
	ds, err := st.ListDeliveries(ctx, "acme", false, 10)
	if err != nil || len(ds) != 2 {
		t.Fatalf("acme's deliveries: %+v %v", ds, err)
	}
	for _, d := range ds {
		if d.Secret != "" || d.Body != nil || d.Tenant != "acme" {
			t.Errorf("listed delivery carries its secret or body, or another tenant's: %+v", d)
		}
		switch d.EventID {
		case "s:1":
			if d.Status != store.DeliveryDelivered || d.Attempts != 1 {
				t.Errorf("s:1: %+v", d)
			}
		case "s:2":
			if d.Status != store.DeliveryPending || d.Attempts != 1 || d.LastError != "HTTP 500" || !d.NextAt.Equal(now.Add(time.Hour)) {
				t.Errorf("s:2: %+v (next at %v)", d, now.Add(time.Hour))
			}
		}
	}
	if all, err := st.ListDeliveries(ctx, "", true, 10); err != nil || len(all) != 3 {
		t.Errorf("every delivery: %+v %v", all, err)
	}
	if one, err := st.ListDeliveries(ctx, "", true, 1); err != nil || len(one) != 1 {
		t.Errorf("limit 1: %+v %v", one, err)
	}
}

// testQueueBesideAppends: the queue's statements, run without pause from
// another goroutine, never hold up a session's appends, and both finish.
func testQueueBesideAppends(t *testing.T, st WebhookStore) {
	ctx := t.Context()
	const appends = 60
	stop := make(chan struct{})
	var wg sync.WaitGroup
	queued := 0
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if err := st.EnqueueDeliveries(ctx, []store.Delivery{delivery(fmt.Sprintf("q:%d", i), "acme")}); err != nil {
				t.Error(err)
				return
			}
			queued++
			ds, err := st.ClaimDeliveries(ctx, "A", time.Now().Add(time.Minute), time.Minute, 8)
			if err != nil {
				t.Error(err)
				return
			}
			for _, d := range ds {
				d.Attempts, d.Status = 1, store.DeliveryDelivered
				if _, err := st.FinishAttempt(ctx, "A", d); err != nil {
					t.Error(err)
					return
				}
			}
		}
	})
	log := FakeEvents("busy", 1, appends)
	for _, e := range log {
		if err := st.Append(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
	requireEvents(t, mustLoad(t, st, "busy"), log)
	ds, err := st.ListDeliveries(ctx, "acme", false, 500)
	if err != nil || len(ds) != queued {
		t.Fatalf("%d deliveries listed, %d queued: %v", len(ds), queued, err)
	}
	for _, d := range ds {
		if d.Status != store.DeliveryDelivered {
			t.Errorf("not delivered: %+v", d)
		}
	}
}
