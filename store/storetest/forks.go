package storetest

import (
	"testing"

	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/store"
)

// testListForks: a summary carries where its session was forked from,
// after appends that follow the start and after a reopen, and a list by
// ForkedFrom holds a session's direct forks only, newest first, with the
// other filters applied too.
func (s Suite) testListForks(t *testing.T) {
	st := s.open(t)
	ctx := t.Context()
	started := func(id string, sec int, tenant string, from *loop.ForkedFrom) {
		mustAppend(t, st, ev(id, 1, at(sec), &loop.SessionStarted{Task: id, Tenant: tenant, ForkedFrom: from}))
		mustAppend(t, st, ev(id, 2, at(sec+1), &loop.IterationStarted{N: 1}))
	}
	started("root", 1, "", nil)
	started("fork-a", 2, "", &loop.ForkedFrom{ID: "root", Iteration: 5})
	started("fork-b", 3, "acme", &loop.ForkedFrom{ID: "root", Iteration: 2})
	started("fork-of-a", 4, "", &loop.ForkedFrom{ID: "fork-a", Iteration: 6})
	check := func(st store.Store) {
		t.Helper()
		list, err := st.List(ctx, store.Filter{ForkedFrom: "root"})
		if err != nil {
			t.Fatal(err)
		}
		if idList(list) != "fork-b fork-a" || *list[0].ForkedFrom != (loop.ForkedFrom{ID: "root", Iteration: 2}) ||
			*list[1].ForkedFrom != (loop.ForkedFrom{ID: "root", Iteration: 5}) || list[1].Iteration != 1 {
			t.Fatalf("forks of root: %s %+v", idList(list), list)
		}
		if list, _ := st.List(ctx, store.Filter{ForkedFrom: "root", Tenant: "acme"}); idList(list) != "fork-b" {
			t.Fatalf("acme's forks of root: %s", idList(list))
		}
		if list, _ := st.List(ctx, store.Filter{ForkedFrom: "fork-a"}); idList(list) != "fork-of-a" {
			t.Fatalf("forks of fork-a: %s", idList(list))
		}
		if list, _ := st.List(ctx, store.Filter{ForkedFrom: "fork-of-a"}); len(list) != 0 {
			t.Fatalf("forks of a session nobody forked: %s", idList(list))
		}
		all, _ := st.List(ctx, store.Filter{})
		for _, sum := range all {
			if sum.ID == "root" && sum.ForkedFrom != nil {
				t.Fatalf("root is not a fork: %+v", sum.ForkedFrom)
			}
		}
	}
	check(st)
	if s.Reopen != nil {
		check(s.Reopen(t, st))
	}
}
