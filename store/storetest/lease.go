package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/store"
)

// Clock is a settable time source for stores under test (leases expire).
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock returns a clock at a fixed instant.
func NewClock() *Clock { return &Clock{t: base} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock forward.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func (s Suite) openClocked(t *testing.T) (store.Store, *Clock) {
	t.Helper()
	if s.OpenWithClock == nil {
		t.Skip("the store under test takes no clock (Suite.OpenWithClock)")
	}
	c := NewClock()
	st := s.OpenWithClock(t, c.Now)
	t.Cleanup(func() { st.Close() })
	return st, c
}

func (s Suite) testLeases(t *testing.T) {
	st, clock := s.openClocked(t)
	ctx := t.Context()
	const ttl = 10 * time.Second

	a, err := st.Acquire(ctx, "s1", "A", ttl)
	if err != nil || a.Token < 1 || a.Owner != "A" || a.SessionID != "s1" || !a.Expires.Equal(clock.Now().Add(ttl)) {
		t.Fatalf("first acquire: %+v %v", a, err)
	}
	if _, err := st.Acquire(ctx, "s1", "B", ttl); !errors.Is(err, store.ErrLeaseHeld) {
		t.Fatalf("acquire of a held lease: %v, want ErrLeaseHeld", err)
	}
	again, err := st.Acquire(ctx, "s1", "A", ttl)
	if err != nil || again.Token != a.Token {
		t.Fatalf("the holder re-acquiring: %+v %v, want the same token %d", again, err, a.Token)
	}
	clock.Advance(5 * time.Second)
	r, err := st.Renew(ctx, a, ttl)
	if err != nil || r.Token != a.Token || !r.Expires.Equal(clock.Now().Add(ttl)) {
		t.Fatalf("renew: %+v %v", r, err)
	}
	clock.Advance(ttl + time.Second) // expired
	b, err := st.Acquire(ctx, "s1", "B", ttl)
	if err != nil || b.Token <= a.Token {
		t.Fatalf("acquire after expiry: %+v %v, want a token above %d", b, err, a.Token)
	}
	if _, err := st.Renew(ctx, a, ttl); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("renew by the old holder: %v, want ErrLeaseLost", err)
	}
	// Release by the old holder changes nothing; by the holder, frees it.
	if err := st.Release(ctx, a); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Acquire(ctx, "s1", "C", ttl); !errors.Is(err, store.ErrLeaseHeld) {
		t.Fatalf("a stale release freed the lease: %v", err)
	}
	if err := st.Release(ctx, b); err != nil {
		t.Fatal(err)
	}
	c, err := st.Acquire(ctx, "s1", "C", ttl)
	if err != nil || c.Token <= b.Token {
		t.Fatalf("acquire after release: %+v %v", c, err)
	}
	if _, err := st.Acquire(ctx, "s2", "A", ttl); err != nil {
		t.Fatal(err)
	}
	all, err := st.LeasesOf(ctx)
	if err != nil || len(all) != 2 || all["s1"].Owner != "C" || all["s1"].Token != c.Token || all["s2"].Owner != "A" {
		t.Fatalf("LeasesOf(): %+v %v", all, err)
	}
	some, err := st.LeasesOf(ctx, "s2", "nope")
	if err != nil || len(some) != 1 || some["s2"].Owner != "A" {
		t.Fatalf("LeasesOf(s2, nope): %+v %v", some, err)
	}
}

// testRenewAll: many leases renewed in one call; one another owner took
// is left out, and left as that owner has it.
func (s Suite) testRenewAll(t *testing.T) {
	st, clock := s.openClocked(t)
	rn, ok := st.(store.LeaseRenewer)
	if !ok {
		t.Skip("the store under test renews one lease at a time (no store.LeaseRenewer)")
	}
	ctx := t.Context()
	const ttl = 10 * time.Second
	var held []store.Lease
	for _, id := range []string{"r1", "r2", "r3"} {
		l, err := st.Acquire(ctx, id, "A", ttl)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, l)
	}
	if got, err := rn.RenewAll(ctx, nil, ttl); err != nil || len(got) != 0 {
		t.Fatalf("renewing no leases: %+v %v", got, err)
	}
	clock.Advance(ttl + time.Second) // all expired; B takes r2
	taken, err := st.Acquire(ctx, "r2", "B", ttl)
	if err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Second)
	// Out of order, with a session nobody holds and r1 twice, once with a
	// token that is not its own.
	ghost := store.Lease{SessionID: "ghost", Owner: "A", Token: 1}
	stale := held[0]
	stale.Token += 1000
	got, err := rn.RenewAll(ctx, []store.Lease{held[2], held[1], ghost, stale, held[0]}, ttl)
	if err != nil {
		t.Fatal(err)
	}
	want := clock.Now().Add(ttl)
	if len(got) != 2 || got[0].SessionID != "r3" || got[1].SessionID != "r1" {
		t.Fatalf("renewed %+v, want r3 then r1 (r2 was taken, ghost never held, r1's other token not its own)", got)
	}
	for i, l := range got {
		h := held[2-2*i]
		if l.Token != h.Token || l.Owner != "A" || !l.Expires.Equal(want) {
			t.Fatalf("renewed %+v, want token %d, owner A, expiring at %v", l, h.Token, want)
		}
	}
	all, err := st.LeasesOf(ctx, "r1", "r2", "r3")
	if err != nil {
		t.Fatal(err)
	}
	if !all["r1"].Expires.Equal(want) || !all["r3"].Expires.Equal(want) {
		t.Fatalf("stored after RenewAll: %+v, want r1 and r3 until %v", all, want)
	}
	if r2 := all["r2"]; r2.Owner != "B" || r2.Token != taken.Token || !r2.Expires.Equal(taken.Expires) {
		t.Fatalf("r2 after RenewAll: %+v, want B's lease untouched %+v", r2, taken)
	}
	// B's lease lives on: A cannot take it back.
	if _, err := st.Acquire(ctx, "r2", "A", ttl); !errors.Is(err, store.ErrLeaseHeld) {
		t.Fatalf("acquire of r2 by A: %v, want ErrLeaseHeld", err)
	}
}

func (s Suite) testAppendFenced(t *testing.T) {
	st, clock := s.openClocked(t)
	ctx := t.Context()
	a, err := st.Acquire(ctx, "f", "A", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	e1 := ev("f", 1, at(1), &loop.SessionStarted{Task: "fenced"})
	if err := st.AppendFenced(ctx, a.Token, e1); err != nil {
		t.Fatalf("append under the lease: %v", err)
	}
	clock.Advance(2 * time.Second)
	e2 := ev("f", 2, at(2), &loop.IterationStarted{N: 1})
	// Expired, but nobody took it: the holder may still append.
	if err := st.AppendFenced(ctx, a.Token, e2); err != nil {
		t.Fatalf("append under an expired lease nobody took: %v", err)
	}
	b, err := st.Acquire(ctx, "f", "B", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	e3 := ev("f", 3, at(3), &loop.Warning{Code: "x", Message: "from A"})
	if err := st.AppendFenced(ctx, a.Token, e3); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("append by the old holder: %v, want ErrLeaseLost", err)
	}
	if err := st.AppendFenced(ctx, b.Token, ev("f", 3, at(3), &loop.Warning{Code: "x", Message: "from B"})); err != nil {
		t.Fatalf("append by the new holder: %v", err)
	}
	got := mustLoad(t, st, "f")
	if len(got) != 3 || got[2].Data.(*loop.Warning).Message != "from B" {
		t.Fatalf("log after fencing: %d events", len(got))
	}
	if err := st.AppendFenced(ctx, 99, ev("nolease", 1, at(1), &loop.SessionStarted{Task: "x"})); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("fenced append to a session without a lease: %v", err)
	}
}

// testAppendAcquiring holds a store that takes a new session's lease with
// its first events (store.LeaseStarter) to both or neither: a refusal of
// the lease writes no event, a refusal of the events takes no lease.
func (s Suite) testAppendAcquiring(t *testing.T) {
	st, clock := s.openClocked(t)
	ls, ok := st.(store.LeaseStarter)
	if !ok {
		t.Skip("the store does not take a lease with an append (store.LeaseStarter)")
	}
	ctx := t.Context()
	const ttl = 10 * time.Second
	start := func(id string) loop.Event { return ev(id, 1, at(1), &loop.SessionStarted{Task: "acquiring " + id}) }

	a, err := ls.AppendAcquiring(ctx, "A", ttl, start("n"), ev("n", 2, at(2), &loop.IterationStarted{N: 1}))
	if err != nil || a.SessionID != "n" || a.Owner != "A" || a.Token < 1 || !a.Expires.Equal(clock.Now().Add(ttl)) {
		t.Fatalf("append acquiring a new session: %+v %v", a, err)
	}
	if got := mustLoad(t, st, "n"); len(got) != 2 {
		t.Fatalf("log: %d events, want 2", len(got))
	}
	held, err := st.LeasesOf(ctx, "n")
	if err != nil || held["n"].Token != a.Token || held["n"].Owner != "A" {
		t.Fatalf("lease stored: %+v %v, want token %d of A", held, err, a.Token)
	}
	// The lease fences as one Acquire gave.
	if err := st.AppendFenced(ctx, a.Token, ev("n", 3, at(3), &loop.Warning{Code: "x", Message: "A"})); err != nil {
		t.Fatalf("fenced append under the lease taken: %v", err)
	}
	if _, err := st.Acquire(ctx, "n", "B", ttl); !errors.Is(err, store.ErrLeaseHeld) {
		t.Fatalf("acquire by another owner: %v, want ErrLeaseHeld", err)
	}

	// Another owner's live lease: refused, no event written.
	if _, err := st.Acquire(ctx, "held", "B", ttl); err != nil {
		t.Fatal(err)
	}
	if _, err := ls.AppendAcquiring(ctx, "A", ttl, start("held")); !errors.Is(err, store.ErrLeaseHeld) {
		t.Fatalf("append acquiring a session another owner holds: %v, want ErrLeaseHeld", err)
	}
	if _, err := st.Load(ctx, "held"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("load after a refused lease: %v, want ErrNotFound (nothing written)", err)
	}

	// Events that conflict with the log: refused, the lease left as it was.
	if err := st.Append(ctx, start("exists")); err != nil {
		t.Fatal(err)
	}
	if _, err := ls.AppendAcquiring(ctx, "A", ttl, ev("exists", 1, at(5), &loop.SessionStarted{Task: "again"})); !errors.Is(err, loop.ErrSeqConflict) {
		t.Fatalf("append acquiring over an existing session: %v, want ErrSeqConflict", err)
	}
	if held, err := st.LeasesOf(ctx, "exists"); err != nil || held["exists"].Owner == "A" && held["exists"].Expires.After(clock.Now()) {
		t.Fatalf("lease after refused events: %+v %v, want none taken", held, err)
	}

	// An expired lease is taken over with a larger token; the old holder
	// is fenced off.
	clock.Advance(ttl + time.Second)
	if _, err := st.Acquire(ctx, "later", "B", ttl); err != nil {
		t.Fatal(err)
	}
	old, _ := st.LeasesOf(ctx, "later")
	clock.Advance(ttl + time.Second)
	c, err := ls.AppendAcquiring(ctx, "A", ttl, start("later"))
	if err != nil || c.Token <= old["later"].Token {
		t.Fatalf("append acquiring an expired lease: %+v %v, want a token above %d", c, err, old["later"].Token)
	}
	if err := st.AppendFenced(ctx, old["later"].Token, ev("later", 2, at(2), &loop.IterationStarted{N: 1})); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("append by the old holder: %v, want ErrLeaseLost", err)
	}
	// Events of two sessions are refused whole.
	if _, err := ls.AppendAcquiring(ctx, "A", ttl, start("two1"), start("two2")); err == nil {
		t.Fatal("append acquiring two sessions' events: no error")
	}
	for _, id := range []string{"two1", "two2"} {
		if _, err := st.Load(ctx, id); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("load %s after a refused two-session append: %v", id, err)
		}
	}
}

// testAppendAcquiringBurst starts many sessions at once, taking their
// leases with their first events, as a server does when many are
// created together: the store writes them in shared batches, and each
// still gets its own answer. New sessions are started under their
// leases; one whose lease another owner holds writes nothing; one that
// exists is refused and takes no lease.
func (s Suite) testAppendAcquiringBurst(t *testing.T) {
	st := s.open(t)
	ls, ok := st.(store.LeaseStarter)
	if !ok {
		t.Skip("the store does not take a lease with an append (store.LeaseStarter)")
	}
	ctx := t.Context()
	const ttl, n = time.Minute, 60
	kind := func(i int) string { return [...]string{"new", "held", "exists"}[i%3] }
	id := func(i int) string { return fmt.Sprintf("burst-%s-%d", kind(i), i) }
	for i := range n {
		switch kind(i) {
		case "held":
			if _, err := st.Acquire(ctx, id(i), "B", ttl); err != nil {
				t.Fatal(err)
			}
		case "exists":
			if err := st.Append(ctx, ev(id(i), 1, at(1), &loop.SessionStarted{Task: "first"})); err != nil {
				t.Fatal(err)
			}
		}
	}
	errs := make([]error, n)
	leases := make([]store.Lease, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			leases[i], errs[i] = ls.AppendAcquiring(ctx, "A", ttl,
				ev(id(i), 1, at(2), &loop.SessionStarted{Task: "burst"}), ev(id(i), 2, at(3), &loop.IterationStarted{N: 1}))
		})
	}
	wg.Wait()
	held, err := st.LeasesOf(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		events, lerr := st.Load(ctx, id(i))
		switch kind(i) {
		case "new":
			if errs[i] != nil || leases[i].Token < 1 || len(events) != 2 || held[id(i)].Owner != "A" || held[id(i)].Token != leases[i].Token {
				t.Errorf("%s: %+v %v; %d events (%v); stored lease %+v", id(i), leases[i], errs[i], len(events), lerr, held[id(i)])
			}
		case "held":
			if !errors.Is(errs[i], store.ErrLeaseHeld) || !errors.Is(lerr, store.ErrNotFound) || held[id(i)].Owner != "B" {
				t.Errorf("%s: %v (want ErrLeaseHeld); load %v (want nothing written); lease %+v (want B's)", id(i), errs[i], lerr, held[id(i)])
			}
		case "exists":
			if !errors.Is(errs[i], loop.ErrSeqConflict) || len(events) != 1 {
				t.Errorf("%s: %v (want ErrSeqConflict); %d events (want the 1 stored before)", id(i), errs[i], len(events))
			}
			if l, ok := held[id(i)]; ok && l.Owner == "A" && l.Expires.After(time.Now()) {
				t.Errorf("%s: a refused start left A a live lease %+v", id(i), l)
			}
		}
	}
}

func (s Suite) testControls(t *testing.T) {
	st := s.open(t)
	ctx := t.Context()
	d, _ := json.Marshal(loop.ApprovalDecision{CallID: "c1", ArgsHash: "h", Approved: true})
	in := []store.Control{
		{SessionID: "a", Kind: store.ControlPause, Text: "lunch", Subject: "ann"},
		{SessionID: "b", Kind: store.ControlDecide, Decision: d, Subject: "bob"},
		{SessionID: "a", Kind: store.ControlTerminate, Text: "failed", Subject: "ann"},
	}
	var out []store.Control
	for _, c := range in {
		got, err := st.RequestControl(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		if got.ID <= 0 || got.CreatedAt.IsZero() || got.Done || (len(out) > 0 && got.ID <= out[len(out)-1].ID) {
			t.Fatalf("stored control %+v", got)
		}
		out = append(out, got)
	}
	back, err := st.Control(ctx, out[1].ID)
	if err != nil || back.SessionID != "b" || back.Kind != store.ControlDecide || string(back.Decision) != string(d) || back.Subject != "bob" || !back.CreatedAt.Equal(out[1].CreatedAt) {
		t.Fatalf("Control(%d) = %+v %v", out[1].ID, back, err)
	}
	after, err := st.ControlsAfter(ctx, out[0].ID)
	if err != nil || len(after) != 2 || after[0].ID != out[1].ID || after[1].ID != out[2].ID {
		t.Fatalf("ControlsAfter: %+v %v", after, err)
	}
	if err := st.CompleteControl(ctx, out[0].ID, "paused at 12"); err != nil {
		t.Fatal(err)
	}
	if err := st.CompleteControl(ctx, out[0].ID, "second outcome"); err != nil {
		t.Fatalf("completing twice: %v", err)
	}
	done, _ := st.Control(ctx, out[0].ID)
	if !done.Done || done.Outcome != "paused at 12" {
		t.Fatalf("completed control %+v", done)
	}
	pend, err := st.PendingControls(ctx, "a")
	if err != nil || len(pend) != 1 || pend[0].ID != out[2].ID || pend[0].Text != "failed" {
		t.Fatalf("PendingControls(a): %+v %v", pend, err)
	}
	all, _ := st.ControlsAfter(ctx, 0)
	if len(all) != 2 {
		t.Fatalf("ControlsAfter(0) = %d controls, want the 2 not done", len(all))
	}
	if _, err := st.Control(ctx, 12345); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("unknown control: %v", err)
	}
}

func (s Suite) testTenantAndDelete(t *testing.T) {
	st := s.open(t)
	ctx := t.Context()
	mustAppend(t, st, ev("t1", 1, at(1), &loop.SessionStarted{Task: "one", Tenant: "acme"}))
	mustAppend(t, st, ev("t2", 1, at(2), &loop.SessionStarted{Task: "two", Tenant: "globex"}))
	mustAppend(t, st, ev("t3", 1, at(3), &loop.SessionStarted{Task: "three", Tenant: "acme"}))
	list, err := st.List(ctx, store.Filter{Tenant: "acme"})
	if err != nil || idList(list) != "t3 t1" || list[0].Tenant != "acme" {
		t.Fatalf("acme's sessions: %s %v", idList(list), err)
	}
	if list, _ := st.List(ctx, store.Filter{CreatedAfter: at(2), CreatedBefore: at(3)}); idList(list) != "t2" {
		t.Fatalf("created in [2s, 3s): %s", idList(list))
	}
	if list, _ := st.List(ctx, store.Filter{Tenant: "acme", CreatedAfter: at(2)}); idList(list) != "t3" {
		t.Fatalf("acme's created from 2s: %s", idList(list))
	}
	if _, err := st.RequestControl(ctx, store.Control{SessionID: "t1", Kind: store.ControlPause}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Acquire(ctx, "t1", "A", time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := st.Delete(ctx, "t1"); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Load(ctx, "t1"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("load after delete: %v", err)
	}
	if p, _ := st.PendingControls(ctx, "t1"); len(p) != 0 {
		t.Fatalf("controls left after delete: %+v", p)
	}
	if l, err := st.Acquire(ctx, "t1", "B", time.Minute); err != nil {
		t.Fatalf("the lease of a deleted session is free: %v", err)
	} else if l.Token < 2 {
		t.Fatalf("token %d after delete: a token never goes back", l.Token)
	}
	if list, _ := st.List(ctx, store.Filter{}); idList(list) != "t3 t2" {
		t.Fatalf("list after delete: %s", idList(list))
	}
	if err := st.Delete(ctx, "t1"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("delete twice: %v", err)
	}
	// The ID can be used again.
	mustAppend(t, st, ev("t1", 1, at(4), &loop.SessionStarted{Task: "again"}))
}

func idList(list []loop.Summary) string {
	var out []string
	for _, s := range list {
		out = append(out, s.ID)
	}
	return strings.Join(out, " ")
}

func (s Suite) testKeys(t *testing.T) {
	st := s.open(t)
	ctx := t.Context()
	k := store.Key{ID: "k1", Hash: "abc123", Tenant: "acme", Role: "operator", Name: "ci", CreatedAt: base}
	if err := st.CreateKey(ctx, k); err != nil {
		t.Fatal(err)
	}
	got, err := st.KeyByHash(ctx, "abc123")
	if err != nil || got.ID != "k1" || got.Tenant != "acme" || got.Role != "operator" || got.Name != "ci" || !got.CreatedAt.Equal(base) {
		t.Fatalf("KeyByHash: %+v %v", got, err)
	}
	if _, err := st.KeyByHash(ctx, "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("unknown key: %v", err)
	}
	if err := st.CreateKey(ctx, store.Key{ID: "k2", Hash: "abc123", Tenant: "x", Role: "viewer", CreatedAt: base}); err == nil {
		t.Fatal("a second key with the same hash was stored")
	}
	st.CreateKey(ctx, store.Key{ID: "k0", Hash: "def", Tenant: "acme", Role: "admin", CreatedAt: base.Add(-time.Hour)})
	st.CreateKey(ctx, store.Key{ID: "k3", Hash: "ghi", Tenant: "globex", Role: "viewer", CreatedAt: base.Add(time.Hour)})
	ids := func(tenant string) string {
		t.Helper()
		list, err := st.ListKeys(ctx, tenant)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, k := range list {
			if k.Hash == "" || k.CreatedAt.IsZero() {
				t.Fatalf("listed key without hash or time: %+v", k)
			}
			out = append(out, k.ID)
		}
		return strings.Join(out, " ")
	}
	if got := ids("acme"); got != "k0 k1" {
		t.Fatalf("acme's keys: %q", got)
	}
	if got := ids(""); got != "k0 k1 k3" {
		t.Fatalf("every key: %q", got)
	}
	// A tenant cannot revoke another's key.
	if err := st.DeleteKey(ctx, "acme", "k3"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("revoking globex's key as acme: %v", err)
	}
	if err := st.DeleteKey(ctx, "acme", "k1"); err != nil {
		t.Fatal(err)
	}
	if _, err := st.KeyByHash(ctx, "abc123"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a revoked key still authenticates: %v", err)
	}
	if err := st.DeleteKey(ctx, "", "k3"); err != nil {
		t.Fatal(err)
	}
	if got := ids(""); got != "k0" {
		t.Fatalf("after revoking: %q", got)
	}
}

func (s Suite) testPrompts(t *testing.T) {
	st := s.open(t)
	ctx := t.Context()
	p1, err := st.PutPrompt(ctx, store.Prompt{Tenant: "acme", Name: "coder", Text: "v1", Author: "ann"})
	if err != nil || p1.Version != 1 || p1.CreatedAt.IsZero() {
		t.Fatalf("first version: %+v %v", p1, err)
	}
	p2, _ := st.PutPrompt(ctx, store.Prompt{Tenant: "acme", Name: "coder", Text: "v2"})
	st.PutPrompt(ctx, store.Prompt{Tenant: "acme", Name: "alpha", Text: "a"})
	st.PutPrompt(ctx, store.Prompt{Tenant: "globex", Name: "coder", Text: "theirs"})
	if p2.Version != 2 {
		t.Fatalf("second version %d", p2.Version)
	}
	latest, err := st.GetPrompt(ctx, "acme", "coder", 0)
	if err != nil || latest.Text != "v2" || latest.Version != 2 {
		t.Fatalf("latest: %+v %v", latest, err)
	}
	old, err := st.GetPrompt(ctx, "acme", "coder", 1)
	if err != nil || old.Text != "v1" || old.Author != "ann" {
		t.Fatalf("version 1: %+v %v", old, err)
	}
	if _, err := st.GetPrompt(ctx, "acme", "coder", 3); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("version 3: %v", err)
	}
	if _, err := st.GetPrompt(ctx, "acme", "nope", 0); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("unknown prompt: %v", err)
	}
	list, err := st.ListPrompts(ctx, "acme")
	if err != nil || len(list) != 2 || list[0].Name != "alpha" || list[1].Text != "v2" {
		t.Fatalf("list: %+v %v", list, err)
	}
}

func (s Suite) testListByWorkspaceAndLabels(t *testing.T) {
	st := s.open(t)
	ctx := t.Context()
	mustAppend(t, st, ev("t4", 1, at(5), &loop.SessionStarted{Task: "four", Workspace: "/w/a", Labels: map[string]string{"team": "red", "env": "ci", `odd".key`: "x"}}))
	mustAppend(t, st, ev("t5", 1, at(6), &loop.SessionStarted{Task: "five", Workspace: "/w/b", Labels: map[string]string{"team": "red"}, Limits: loop.Limits{MaxIterations: 12}}))
	if list, _ := st.List(ctx, store.Filter{Labels: map[string]string{"team": "red"}}); idList(list) != "t5 t4" || list[1].Labels["env"] != "ci" || list[1].Workspace != "/w/a" || list[0].MaxIterations != 12 {
		t.Fatalf("team=red: %s %+v", idList(list), list)
	}
	if list, _ := st.List(ctx, store.Filter{Labels: map[string]string{"team": "red", "env": "ci"}}); idList(list) != "t4" {
		t.Fatalf("team=red, env=ci: %s", idList(list))
	}
	if list, _ := st.List(ctx, store.Filter{Labels: map[string]string{`odd".key`: "x"}}); idList(list) != "t4" {
		t.Fatalf("a key with a quote: %s", idList(list))
	}
	if list, _ := st.List(ctx, store.Filter{Workspace: "/w/b"}); idList(list) != "t5" {
		t.Fatalf("workspace /w/b: %s", idList(list))
	}
}
