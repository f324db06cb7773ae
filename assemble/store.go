package assemble

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/agentloop/agentloop/store"
	"github.com/agentloop/agentloop/store/postgres"
)

// IsPostgres reports whether db names a PostgreSQL database
// (postgres://… or postgresql://…) rather than a SQLite file.
func IsPostgres(db string) bool {
	return strings.HasPrefix(db, "postgres://") || strings.HasPrefix(db, "postgresql://")
}

// OpenStore opens the session store db names: a PostgreSQL URL, or the
// path of a SQLite file (the default). Both migrate their schema as they
// open.
func OpenStore(db string) (store.Store, error) {
	if !IsPostgres(db) {
		return OpenSQLite(db)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := postgres.Open(ctx, db)
	if err != nil {
		return nil, fmt.Errorf("opening the session database: %w", err)
	}
	return st, nil
}

// DescribeDB names a database for messages: a SQLite path as it is, a
// PostgreSQL URL with its password masked.
func DescribeDB(db string) string {
	if !IsPostgres(db) {
		return db
	}
	u, err := url.Parse(db)
	if err != nil {
		return "a PostgreSQL database (the URL does not parse)"
	}
	return u.Redacted()
}
