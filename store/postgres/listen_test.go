package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/agentloop/agentloop/store"
	"github.com/agentloop/agentloop/store/postgres/pgtest"
	"github.com/agentloop/agentloop/store/storetest"
)

// Two stores on one database, as two servers: what one commits, the
// other's watchers hear of (the sequence number, no events: they read
// them), also after the listening connection was cut.
func TestWatchersHearOtherServers(t *testing.T) {
	url := pgtest.URL(t)
	a, b := open(t, url), open(t, url)
	defer a.Close()
	defer b.Close()
	notices := make(chan store.Notice, 100)
	stop := b.Watch(func(n store.Notice) {
		select {
		case notices <- n:
		default:
		}
	})
	defer stop()
	waitFor := func(seq int64) {
		t.Helper()
		deadline := time.After(20 * time.Second)
		for {
			select {
			case n := <-notices:
				if n.SessionID == "w" && n.Seq >= seq {
					if n.Events != nil {
						t.Fatalf("a notice from another server carries events: %+v", n)
					}
					return
				}
			case <-deadline:
				t.Fatalf("no notice of seq %d reached the other store", seq)
			}
		}
	}
	events := storetest.FakeEvents("w", 1, 12)
	if err := a.Append(t.Context(), events[:3]...); err != nil {
		t.Fatal(err)
	}
	waitFor(3)
	got, err := b.LoadAfter(t.Context(), "w", 0)
	if err != nil || len(got) != 3 {
		t.Fatalf("the other store reads %d events: %v", len(got), err)
	}

	// Cut b's LISTEN connection: it reconnects and catches up on what it
	// missed meanwhile.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := a.Pool().Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'LISTEN%'`); err != nil {
		t.Fatal(err)
	}
	if err := a.Append(t.Context(), events[3:6]...); err != nil {
		t.Fatal(err)
	}
	waitFor(6)
	if err := a.Append(t.Context(), events[6:10]...); err != nil {
		t.Fatal(err)
	}
	waitFor(10)

	// b never wrote this session, so it reads the session before it
	// writes (its slower path): a hears of that append too.
	fromB := make(chan store.Notice, 100)
	stopA := a.Watch(func(n store.Notice) {
		select {
		case fromB <- n:
		default:
		}
	})
	defer stopA()
	if err := b.Append(t.Context(), events[10:]...); err != nil {
		t.Fatal(err)
	}
	deadline := time.After(20 * time.Second)
	for {
		select {
		case n := <-fromB:
			if n.SessionID == "w" && n.Seq == 12 {
				return
			}
		case <-deadline:
			t.Fatal("no notice of an append written by the other store's slower path")
		}
	}
}

// A server's own commits reach its watchers with their events.
func TestOwnCommitsCarryEvents(t *testing.T) {
	a := open(t, pgtest.URL(t))
	defer a.Close()
	got := make(chan store.Notice, 10)
	defer a.Watch(func(n store.Notice) { got <- n })()
	if err := a.Append(t.Context(), storetest.FakeEvents("own", 1, 2)...); err != nil {
		t.Fatal(err)
	}
	select {
	case n := <-got:
		if n.Seq != 2 || len(n.Events) != 2 {
			t.Fatalf("notice %+v", n)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no notice")
	}
	select {
	case n := <-got:
		t.Fatalf("a second notice of the same commit (the store heard itself): %+v", n)
	case <-time.After(300 * time.Millisecond):
	}
}
