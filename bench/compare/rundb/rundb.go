// Package rundb gives a contender a PostgreSQL database of its own for one
// run: made on the server it is pointed at (or on a server it starts) and
// dropped when the run ends.
package rundb

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/agentloop/agentloop/store/postgres/pgtest"
)

// Postgres makes a database named for this process on the server at url
// — or, when url is empty, on a durable server it starts (pgtest) — and
// returns its URL and the function that drops it (and stops the server it
// started).
func Postgres(ctx context.Context, url string) (dbURL string, drop func() error, err error) {
	stop := func() {}
	if url == "" {
		u, s, err := pgtest.StartServer(true)
		if err != nil {
			return "", nil, fmt.Errorf("%w (or pass -pg URL)", err)
		}
		url, stop = u, s
	}
	admin, err := pgx.Connect(ctx, url)
	if err != nil {
		stop()
		return "", nil, err
	}
	name := fmt.Sprintf("agentloop_bench_%d", os.Getpid())
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
	rest, query, _ := strings.Cut(url, "?")
	i := strings.LastIndex(rest, "/")
	if i < 0 {
		return "", nil, errors.Join(fmt.Errorf("%q: not a postgres:// URL with a database", url), drop())
	}
	dbURL = rest[:i] + "/" + name
	if query != "" {
		dbURL += "?" + query
	}
	return dbURL, drop, nil
}
