package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"
	_ "modernc.org/sqlite" // the driver store/sqlite uses

	"github.com/agentloop/agentloop/bench/compare/rundb"
)

// recorder commits one row — a tool call before it runs, or a session's
// end — the least a loop can write to know, after a crash, that a tool
// that must not run twice may have run, or that a session ended. Record
// returns once the row is durable in
// the sense the store it stands for promises: for SQLite (WAL,
// synchronous=NORMAL) once the commit is in the operating system's hands,
// which survives the process being killed; for PostgreSQL once the server
// flushed it (fsync on).
type recorder interface {
	Record(ctx context.Context, session string, call int, id, args string) error
	Close() error
}

func newRecorder(ctx context.Context, kind, dir, pgURL string) (recorder, error) {
	switch kind {
	case "sqlite":
		return openSQLiteRecorder(ctx, filepath.Join(dir, "calls.db"))
	case "postgres":
		return openPostgresRecorder(ctx, pgURL)
	}
	return nil, fmt.Errorf("-commit %q: want sqlite or postgres (or nothing)", kind)
}

// createCalls makes the one table, with no index to keep: the least a
// commit can write.
const createCalls = `CREATE TABLE calls (session TEXT NOT NULL, call INTEGER NOT NULL, call_id TEXT NOT NULL, args TEXT NOT NULL)`

// sqliteRecorder commits each row alone, on one connection: a single
// writer, as SQLite has.
type sqliteRecorder struct {
	db  *sql.DB
	ins *sql.Stmt
}

func openSQLiteRecorder(ctx context.Context, path string) (*sqliteRecorder, error) {
	// The keys store/sqlite opens its database with; a file: URI, so that
	// '?' or '#' in the path cannot be taken for parameters.
	esc := strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23")
	db, err := sql.Open("sqlite", "file:"+esc.Replace(path)+"?_busy_timeout=10000&_journal_mode=WAL&_synchronous=NORMAL")
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	r := &sqliteRecorder{db: db}
	if err := r.prepare(ctx, path); err != nil {
		db.Close()
		return nil, err
	}
	return r, nil
}

// prepare checks the settings a commit's cost depends on and makes the
// table. No commit checkpoints the WAL into the database file: store/sqlite
// does that on a connection of its own, off the commits' path, and a floor
// pays for no more than the commit.
func (r *sqliteRecorder) prepare(ctx context.Context, path string) error {
	var mode string
	var sync int
	if err := r.db.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		return err
	}
	if err := r.db.QueryRowContext(ctx, "PRAGMA synchronous").Scan(&sync); err != nil {
		return err
	}
	if mode != "wal" || sync != 1 {
		return fmt.Errorf("sqlite %s: journal_mode %q and synchronous %d, want wal and 1 (NORMAL), as store/sqlite", path, mode, sync)
	}
	for _, q := range []string{"PRAGMA wal_autocheckpoint = 0", createCalls} {
		if _, err := r.db.ExecContext(ctx, q); err != nil {
			return err
		}
	}
	var err error
	r.ins, err = r.db.PrepareContext(ctx, `INSERT INTO calls (session, call, call_id, args) VALUES (?, ?, ?, ?)`)
	return err
}

func (r *sqliteRecorder) Record(ctx context.Context, session string, call int, id, args string) error {
	// Without the caller's cancellation, as store/sqlite's writer runs its
	// statements: for a context that can be cancelled the driver starts a
	// goroutine per statement to watch it, which is no part of a floor.
	_, err := r.ins.ExecContext(context.WithoutCancel(ctx), session, call, id, args)
	return err
}

func (r *sqliteRecorder) Close() error { return errors.Join(r.ins.Close(), r.db.Close()) }

// postgresRecorder commits each row alone, from a pool.
type postgresRecorder struct {
	pool *pgxpool.Pool
	drop func() error
}

func openPostgresRecorder(ctx context.Context, url string) (*postgresRecorder, error) {
	dbURL, drop, err := rundb.Postgres(ctx, url)
	if err != nil {
		return nil, fmt.Errorf("-commit postgres: %w", err)
	}
	pool, err := pgxpool.New(ctx, dbURL)
	if err == nil {
		_, err = pool.Exec(ctx, createCalls)
	}
	if err != nil {
		if pool != nil {
			pool.Close()
		}
		return nil, errors.Join(fmt.Errorf("-commit postgres: %w", err), drop())
	}
	return &postgresRecorder{pool: pool, drop: drop}, nil
}

func (r *postgresRecorder) Record(ctx context.Context, session string, call int, id, args string) error {
	_, err := r.pool.Exec(ctx, `INSERT INTO calls (session, call, call_id, args) VALUES ($1, $2, $3, $4)`, session, call, id, args)
	return err
}

func (r *postgresRecorder) Close() error {
	r.pool.Close()
	return r.drop()
}
