// Package rundb gives a contender a PostgreSQL database of its own for one
// run: made on the server it is pointed at (or on a server it starts) and
// dropped when the run ends.
package rundb

import (
	"context"
	"fmt"
	"net/url"
	"os"

	"github.com/jackc/pgx/v5"

	"github.com/agentloop/agentloop/store/postgres/pgtest"
)

// Postgres makes a database named for this process on the server at
// serverURL (postgres://…) — or, when serverURL is empty, on a durable
// server it starts (pgtest) — and returns its URL and the function that
// drops it (and stops the server it started).
func Postgres(ctx context.Context, serverURL string) (dbURL string, drop func() error, err error) {
	name := fmt.Sprintf("agentloop_bench_%d", os.Getpid())
	stop := func() {}
	if serverURL == "" {
		u, s, err := pgtest.StartServer(true)
		if err != nil {
			return "", nil, fmt.Errorf("%w (or pass -pg URL)", err)
		}
		serverURL, stop = u, s
	}
	u, err := url.Parse(serverURL)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		stop()
		return "", nil, fmt.Errorf("%q: want a postgres:// URL", serverURL)
	}
	u.Path = "/" + name
	admin, err := pgx.Connect(ctx, serverURL)
	if err != nil {
		stop()
		return "", nil, err
	}
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		admin.Close(ctx)
		stop()
		return "", nil, err
	}
	drop = func() error {
		defer stop()
		defer admin.Close(context.Background())
		_, err := admin.Exec(context.Background(), "DROP DATABASE "+name+" WITH (FORCE)")
		return err
	}
	return u.String(), drop, nil
}
