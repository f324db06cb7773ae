package postgres_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/agentloop/agentloop/store"
	"github.com/agentloop/agentloop/store/postgres"
	"github.com/agentloop/agentloop/store/postgres/pgtest"
	"github.com/agentloop/agentloop/store/storetest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

func open(t *testing.T, url string, opts ...postgres.Option) *postgres.Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := postgres.Open(ctx, url, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func TestConformance(t *testing.T) {
	storetest.Suite{
		Open: func(t *testing.T) store.Store { return open(t, pgtest.URL(t)) },
		Reopen: func(t *testing.T, s store.Store) store.Store {
			url := s.(*postgres.Store).Pool().Config().ConnString()
			s.Close()
			return open(t, url)
		},
		OpenWithClock: func(t *testing.T, now func() time.Time) store.Store {
			return open(t, pgtest.URL(t), postgres.WithClock(now))
		},
	}.Run(t)
}

// A database that cannot be reached: the error says where, what to check,
// and never the password.
func TestOpenUnreachable(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := postgres.Open(ctx, "postgres://al:hunter2@127.0.0.1:1/agentloop?connect_timeout=2")
	if err == nil || !strings.Contains(err.Error(), "agentloop on 127.0.0.1:1") || !strings.Contains(err.Error(), "is PostgreSQL running there") || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("%v", err)
	}
	_, err = postgres.Open(ctx, "postgres://al:hunter2@127.0.0.1:notaport/agentloop")
	if err == nil || !strings.Contains(err.Error(), "want postgres://") || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("%v", err)
	}
}
