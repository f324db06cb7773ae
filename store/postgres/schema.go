package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// ErrNewerSchema is returned (wrapped) by Open when the database was
// migrated by a newer agentloop whose schema this build does not know.
var ErrNewerSchema = errors.New("database schema is newer than this build")

// migrations[i] takes the schema from version i to version i+1; the version
// lives in agentloop_schema. Append new migrations; never edit old ones.
var migrations = []string{
	// 1: everything the SQLite store has at its schema 6.
	`
CREATE TABLE sessions (
	id             TEXT             NOT NULL PRIMARY KEY,
	tenant         TEXT             NOT NULL,
	task           TEXT             NOT NULL,
	model          TEXT             NOT NULL,
	status         TEXT             NOT NULL,
	reason         TEXT             NOT NULL,
	iteration      INTEGER          NOT NULL,
	max_iterations INTEGER          NOT NULL,
	tokens         BIGINT           NOT NULL,
	cost_usd       DOUBLE PRECISION NOT NULL,
	created_at     TIMESTAMPTZ      NOT NULL,
	updated_at     TIMESTAMPTZ      NOT NULL,
	last_seq       BIGINT           NOT NULL,
	workspace      TEXT             NOT NULL,
	labels         JSONB            NOT NULL
);
CREATE INDEX sessions_newest ON sessions (created_at DESC, id DESC);
CREATE INDEX sessions_tenant_newest ON sessions (tenant, created_at DESC, id DESC);
CREATE INDEX sessions_status ON sessions (status);
CREATE INDEX sessions_workspace ON sessions (workspace);
CREATE INDEX sessions_labels ON sessions USING GIN (labels jsonb_path_ops);

-- The append-only log: one row per event, keyed by tenant, session and
-- sequence number. Rows are only ever inserted (and deleted with their
-- session).
CREATE TABLE events (
	tenant     TEXT        NOT NULL,
	session_id TEXT        NOT NULL,
	seq        BIGINT      NOT NULL,
	type       TEXT        NOT NULL,
	version    INTEGER     NOT NULL,
	time       TIMESTAMPTZ NOT NULL,
	data       JSON        NOT NULL, -- the exact text (see the package documentation)
	PRIMARY KEY (tenant, session_id, seq)
);
CREATE INDEX events_session ON events (session_id, seq);

-- One row per session ever leased: token only grows (a release expires
-- the row rather than deleting it, so the next holder's token is larger).
CREATE TABLE leases (
	session_id TEXT        NOT NULL PRIMARY KEY,
	owner      TEXT        NOT NULL,
	token      BIGINT      NOT NULL,
	expires_at TIMESTAMPTZ NOT NULL
);

CREATE TABLE controls (
	id         BIGSERIAL   PRIMARY KEY,
	session_id TEXT        NOT NULL,
	kind       TEXT        NOT NULL,
	text       TEXT        NOT NULL,
	decision   JSON,
	subject    TEXT        NOT NULL,
	created_at TIMESTAMPTZ NOT NULL,
	done       BOOLEAN     NOT NULL DEFAULT false,
	outcome    TEXT        NOT NULL DEFAULT ''
);
CREATE INDEX controls_pending ON controls (id) WHERE NOT done;
CREATE INDEX controls_session ON controls (session_id, id) WHERE NOT done;

CREATE TABLE api_keys (
	id         TEXT        NOT NULL PRIMARY KEY,
	hash       TEXT        NOT NULL UNIQUE,
	tenant     TEXT        NOT NULL,
	role       TEXT        NOT NULL,
	name       TEXT        NOT NULL,
	created_at TIMESTAMPTZ NOT NULL
);

CREATE TABLE prompts (
	tenant     TEXT        NOT NULL,
	name       TEXT        NOT NULL,
	version    INTEGER     NOT NULL,
	text       TEXT        NOT NULL,
	author     TEXT        NOT NULL,
	created_at TIMESTAMPTZ NOT NULL,
	PRIMARY KEY (tenant, name, version)
);
`,
	// 2: the session a fork was made from, and at which step, in the
	// summary, for listing a session's forks; forks recorded before are
	// filled in from their session.started.
	`
ALTER TABLE sessions ADD COLUMN forked_from TEXT NOT NULL DEFAULT '';
ALTER TABLE sessions ADD COLUMN forked_at INTEGER NOT NULL DEFAULT 0;
CREATE INDEX sessions_forked_from ON sessions (forked_from, created_at DESC, id DESC) WHERE forked_from <> '';
UPDATE sessions SET forked_from = e.data->'forked_from'->>'id', forked_at = COALESCE((e.data->'forked_from'->>'iteration')::integer, 0)
FROM events e
WHERE e.session_id = sessions.id AND e.tenant = sessions.tenant AND e.seq = 1 AND e.type = 'session.started'
	AND e.data->'forked_from'->>'id' IS NOT NULL;
`,
	// 3: one row per append to a session instead of one per event, in
	// the frames the SQLite store uses (store/internal/eventbatch): an
	// append writes one row and one index entry, not a row and two index
	// entries for each of its events. Existing events become one-event
	// batches; their times, kept to the microsecond, become Unix
	// nanoseconds (the zero time, which has none, the smallest bigint).
	`
CREATE TABLE event_batches (
	session_id TEXT   NOT NULL,
	first_seq  BIGINT NOT NULL,
	last_seq   BIGINT NOT NULL,
	events     BYTEA  NOT NULL,
	PRIMARY KEY (session_id, last_seq)
);
INSERT INTO event_batches (session_id, first_seq, last_seq, events)
	SELECT session_id, seq, seq, convert_to(
		type || ' ' || version || ' ' ||
		CASE WHEN time = '0001-01-01 00:00:00+00' THEN '-9223372036854775808'
			ELSE ((EXTRACT(EPOCH FROM time) * 1000000)::bigint * 1000)::text END || ' ' ||
		octet_length(convert_to(data::text, 'UTF8')) || E'\n' || data::text || E'\n', 'UTF8')
	FROM events;
DROP TABLE events;
`,
}

// SchemaVersion is the schema version this build writes.
const SchemaVersion = 3

// migrationLock is the advisory lock that keeps two servers starting at
// once from migrating together.
const migrationLock = 0x6167656e746c6f6f // "agentloo"

// Migrate brings the database to SchemaVersion, one transaction per step
// under an advisory lock, and refuses a database from a newer build. It
// returns the version before and after.
func Migrate(ctx context.Context, pool *pgxpool.Pool) (from, to int, err error) {
	if len(migrations) != SchemaVersion {
		panic("postgres: SchemaVersion does not match the migrations")
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return 0, 0, err
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, int64(migrationLock)); err != nil {
		return 0, 0, fmt.Errorf("lock for migration: %w", err)
	}
	defer conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, int64(migrationLock))
	if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS agentloop_schema (version INTEGER NOT NULL)`); err != nil {
		return 0, 0, fmt.Errorf("create agentloop_schema: %w", err)
	}
	var v int
	err = conn.QueryRow(ctx, `SELECT version FROM agentloop_schema`).Scan(&v)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		if _, err := conn.Exec(ctx, `INSERT INTO agentloop_schema (version) VALUES (0)`); err != nil {
			return 0, 0, fmt.Errorf("initialise agentloop_schema: %w", err)
		}
	case err != nil:
		return 0, 0, fmt.Errorf("read schema version: %w", err)
	}
	from = v
	if v > SchemaVersion {
		return v, v, fmt.Errorf("the database is at schema %d, this build knows %d: %w (upgrade agentloop)", v, SchemaVersion, ErrNewerSchema)
	}
	for ; v < SchemaVersion; v++ {
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, migrations[v]); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `UPDATE agentloop_schema SET version = $1`, v+1)
			return err
		})
		if err != nil {
			return from, v, fmt.Errorf("migrate to schema %d: %w", v+1, err)
		}
	}
	if err := compressLogWithLZ4(ctx, conn.Conn()); err != nil {
		return from, v, err
	}
	return from, v, nil
}

// compressLogWithLZ4 has the server compress the log's new rows with lz4
// rather than pglz when it can (PostgreSQL 14 and later built with lz4, as
// Debian and the PostgreSQL images build it): a 64 KiB tool output costs
// the server about a third of pglz's CPU to store. Rows stored before keep
// pglz and read as before. It is no schema version: a build without it
// reads and writes the table the same, so servers of both can share it.
func compressLogWithLZ4(ctx context.Context, conn *pgx.Conn) error {
	// lz4 is among the setting's values only on a server built with it.
	var can bool
	if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_settings WHERE name = 'default_toast_compression' AND 'lz4' = ANY(enumvals))`).Scan(&can); err != nil || !can {
		return err
	}
	var method string
	if err := conn.QueryRow(ctx, `SELECT attcompression::text FROM pg_attribute WHERE attrelid = 'event_batches'::regclass AND attname = 'events'`).Scan(&method); err != nil {
		return fmt.Errorf("read the log's compression: %w", err)
	}
	if method == "l" {
		return nil
	}
	if _, err := conn.Exec(ctx, `ALTER TABLE event_batches ALTER COLUMN events SET COMPRESSION lz4`); err != nil {
		return fmt.Errorf("compress the log with lz4: %w", err)
	}
	return nil
}
