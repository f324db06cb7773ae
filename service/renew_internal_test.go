package service

import (
	"testing"
	"time"

	"github.com/agentloop/agentloop/store"
	"github.com/agentloop/agentloop/store/memory"
)

// renew tells the leases renewed from those another owner took, whether
// the store renews many at once or one at a time.
func TestRenewTellsRenewedFromLost(t *testing.T) {
	ctx := t.Context()
	st := memory.New()
	a, err := st.Acquire(ctx, "a", "me", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	b, err := st.Acquire(ctx, "b", "me", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	stale := b
	stale.Token++ // b as if it had changed hands: not this token's any more
	for name, s := range map[string]store.Leases{"RenewAll": st, "one at a time": struct{ store.Leases }{st}} {
		renewed, lost := renew(ctx, s, []store.Lease{a, stale}, time.Minute)
		if len(renewed) != 1 || renewed[0].SessionID != "a" || renewed[0].Token != a.Token {
			t.Fatalf("%s: renewed %+v, want a", name, renewed)
		}
		if len(lost) != 1 || lost[0] != stale {
			t.Fatalf("%s: lost %+v, want b's stale lease", name, lost)
		}
	}
	st.Close()
	// A store that fails renews nothing and loses nothing: tried again.
	for name, s := range map[string]store.Leases{"RenewAll": st, "one at a time": struct{ store.Leases }{st}} {
		if renewed, lost := renew(ctx, s, []store.Lease{a}, time.Minute); len(renewed)+len(lost) != 0 {
			t.Fatalf("%s on a closed store: renewed %+v, lost %+v", name, renewed, lost)
		}
	}
}
