package postgres_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/agentloop/agentloop/store"
	"github.com/agentloop/agentloop/store/postgres/pgtest"
	"github.com/agentloop/agentloop/store/storetest"
)

func TestWebhooks(t *testing.T) {
	storetest.Webhooks(t, func(t *testing.T) storetest.WebhookStore {
		st := open(t, pgtest.URL(t))
		t.Cleanup(func() { st.Close() })
		return st
	})
}

// Two servers on one database, claiming at once, each get a delivery
// only the other did not: every delivery is claimed exactly once.
func TestWebhookClaimsAcrossServers(t *testing.T) {
	url := pgtest.URL(t)
	a, b := open(t, url), open(t, url)
	defer a.Close()
	defer b.Close()
	ctx := t.Context()
	if err := a.PrepareWebhooks(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.PrepareWebhooks(ctx); err != nil {
		t.Fatal(err)
	}
	const n = 200
	var ds []store.Delivery
	for i := range n {
		id := fmt.Sprintf("s:%d", i)
		ds = append(ds, store.Delivery{ID: "t|" + id, EventID: id, SessionID: "s", Kind: "ended", URL: "https://hooks.example", Secret: "k", Body: []byte("{}")})
	}
	if err := a.EnqueueDeliveries(ctx, ds); err != nil {
		t.Fatal(err)
	}
	now := time.Now().Add(time.Minute)
	var mu sync.Mutex
	claimed := map[string]string{}
	var wg sync.WaitGroup
	for _, s := range []struct {
		name string
		st   store.Webhooks
	}{{"A", a}, {"B", b}} {
		wg.Go(func() {
			for {
				got, err := s.st.ClaimDeliveries(ctx, s.name, now, time.Minute, 7)
				if err != nil {
					t.Error(err)
					return
				}
				if len(got) == 0 {
					return
				}
				mu.Lock()
				for _, d := range got {
					if other, ok := claimed[d.ID]; ok {
						t.Errorf("%s claimed by %s and %s", d.ID, other, s.name)
					}
					claimed[d.ID] = s.name
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(claimed) != n {
		t.Errorf("%d of %d deliveries claimed", len(claimed), n)
	}
}
