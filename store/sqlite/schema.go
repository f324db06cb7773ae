package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// ErrNewerSchema is returned (wrapped) by Open when the database was written
// by a newer agentloop whose schema this build does not know.
var ErrNewerSchema = errors.New("database schema is newer than this build")

// migrations[i] takes the schema from version i to version i+1. The version
// lives in PRAGMA user_version. Append new migrations; never edit old ones.
var migrations = []string{
	// 1: the event log and one summary row per session.
	`
CREATE TABLE sessions (
	id         TEXT    NOT NULL PRIMARY KEY,
	task       TEXT    NOT NULL,
	model      TEXT    NOT NULL,
	status     TEXT    NOT NULL,
	reason     TEXT    NOT NULL,
	iteration  INTEGER NOT NULL,
	tokens     INTEGER NOT NULL,
	cost_usd   REAL    NOT NULL,
	created_at INTEGER NOT NULL, -- Unix nanoseconds; see encodeTime
	updated_at INTEGER NOT NULL,
	last_seq   INTEGER NOT NULL
);
CREATE INDEX sessions_newest ON sessions (created_at DESC, id DESC);

-- A rowid table rather than WITHOUT ROWID: events are often larger than
-- the ~1 KB a WITHOUT ROWID (index) b-tree keeps in a 4 KB page, and
-- spilling them to overflow pages made the file 50% bigger and group
-- commits slower (see README.md). Rows are stored in append order; the
-- unique index keeps each session's log ordered and free of duplicates.
CREATE TABLE events (
	id         INTEGER PRIMARY KEY,
	session_id TEXT    NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
	seq        INTEGER NOT NULL,
	type       TEXT    NOT NULL,
	version    INTEGER NOT NULL,
	time       INTEGER NOT NULL, -- Unix nanoseconds; see encodeTime
	data       BLOB    NOT NULL, -- the payload as JSON (loop.Event.EncodeData)
	UNIQUE (session_id, seq)
);
`,
	// 2: tenants, session leases and durable control requests.
	`
ALTER TABLE sessions ADD COLUMN tenant TEXT NOT NULL DEFAULT '';
CREATE INDEX sessions_tenant_newest ON sessions (tenant, created_at DESC, id DESC);

-- One row per session ever leased: token only grows (a release expires
-- the row rather than deleting it, so the next holder's token is larger).
CREATE TABLE leases (
	session_id TEXT    NOT NULL PRIMARY KEY,
	owner      TEXT    NOT NULL,
	token      INTEGER NOT NULL,
	expires_at INTEGER NOT NULL -- Unix nanoseconds
);

CREATE TABLE controls (
	id         INTEGER PRIMARY KEY AUTOINCREMENT, -- never reused
	session_id TEXT    NOT NULL,
	kind       TEXT    NOT NULL,
	text       TEXT    NOT NULL,
	decision   BLOB,
	subject    TEXT    NOT NULL,
	created_at INTEGER NOT NULL,
	done       INTEGER NOT NULL DEFAULT 0,
	outcome    TEXT    NOT NULL DEFAULT ''
);
CREATE INDEX controls_pending ON controls (done, id);
CREATE INDEX controls_session ON controls (session_id, done, id);
`,
	// 3: API keys, stored hashed.
	`
CREATE TABLE api_keys (
	id         TEXT    NOT NULL PRIMARY KEY,
	hash       TEXT    NOT NULL UNIQUE,
	tenant     TEXT    NOT NULL,
	role       TEXT    NOT NULL,
	name       TEXT    NOT NULL,
	created_at INTEGER NOT NULL
);
`,
	// 4: versioned prompts.
	`
CREATE TABLE prompts (
	tenant     TEXT    NOT NULL,
	name       TEXT    NOT NULL,
	version    INTEGER NOT NULL,
	text       TEXT    NOT NULL,
	author     TEXT    NOT NULL,
	created_at INTEGER NOT NULL,
	PRIMARY KEY (tenant, name, version)
);
`,
	// 5: workspace and labels in the summary, for listing by them.
	`
ALTER TABLE sessions ADD COLUMN workspace TEXT NOT NULL DEFAULT '';
ALTER TABLE sessions ADD COLUMN labels TEXT NOT NULL DEFAULT ''; -- JSON object, '' for none
CREATE INDEX sessions_workspace ON sessions (workspace);
`,
	// 6: the step limit in the summary, for "step n of N" in lists.
	`
ALTER TABLE sessions ADD COLUMN max_iterations INTEGER NOT NULL DEFAULT 0;
`,
	// 7: one row per append to a session instead of one per event (see
	// store/internal/eventbatch for the framing): an iteration then writes one row and one
	// index entry instead of five of each. Existing events become
	// one-event batches.
	`
CREATE TABLE event_batches (
	id         INTEGER PRIMARY KEY,
	session_id TEXT    NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
	first_seq  INTEGER NOT NULL,
	last_seq   INTEGER NOT NULL,
	events     BLOB    NOT NULL,
	UNIQUE (session_id, last_seq)
);
INSERT INTO event_batches (session_id, first_seq, last_seq, events)
	SELECT session_id, seq, seq,
		CAST(type || ' ' || version || ' ' || time || ' ' || length(CAST(data AS BLOB)) || char(10) || CAST(data AS TEXT) || char(10) AS BLOB)
	FROM events ORDER BY id;
DROP TABLE events;
`,
	// 8: the tenant and workspace indexes hold only sessions that have
	// one. Most sessions have neither (a library user's, a server without
	// tenants), and a new session's commit then writes two index pages
	// fewer — 8.6 WAL frames instead of 10.6 for a short session.
	`
DROP INDEX sessions_tenant_newest;
CREATE INDEX sessions_tenant_newest ON sessions (tenant, created_at DESC, id DESC) WHERE tenant <> '';
DROP INDEX sessions_workspace;
CREATE INDEX sessions_workspace ON sessions (workspace) WHERE workspace <> '';
`,
	// 9: the sessions Delete removed, so that a session-end journal a
	// process left when it died never brings one back (see journal.go).
	// Emptied by an Open that finds no journal of another process.
	`
CREATE TABLE deleted_sessions (
	id         TEXT    NOT NULL,
	created_at INTEGER NOT NULL, -- the session's, Unix nanoseconds
	PRIMARY KEY (id, created_at)
) WITHOUT ROWID;
`,
	// 10: the session-end journal is gone, and with it the tombstones it
	// needed (Open refuses a journal that still holds ends: see
	// refuseEndJournals).
	`
DROP TABLE deleted_sessions;
`,
	// 11: the session a fork was made from, and at which step, in the
	// summary, for listing a session's forks. Forks recorded before are
	// filled in from their session.started, the first event of their
	// first batch (see store/internal/eventbatch for the framing: a header line, then the
	// payload, whose JSON holds no raw newline, then a newline).
	`
ALTER TABLE sessions ADD COLUMN forked_from TEXT NOT NULL DEFAULT '';
ALTER TABLE sessions ADD COLUMN forked_at INTEGER NOT NULL DEFAULT 0;
CREATE INDEX sessions_forked_from ON sessions (forked_from, created_at DESC, id DESC) WHERE forked_from <> '';
UPDATE sessions SET
	forked_from = COALESCE(json_extract(started.payload, '$.forked_from.id'), ''),
	forked_at = COALESCE(json_extract(started.payload, '$.forked_from.iteration'), 0)
FROM (
	SELECT session_id, CAST(substr(rest, 1, instr(rest, x'0a') - 1) AS TEXT) AS payload
	FROM (SELECT session_id, substr(events, instr(events, x'0a') + 1) AS rest FROM event_batches
		WHERE first_seq = 1 AND substr(events, 1, 16) = CAST('session.started ' AS BLOB)
			AND instr(events, CAST('"forked_from":' AS BLOB)) > 0)
) AS started
WHERE sessions.id = started.session_id AND json_valid(started.payload);
`,
}

// SchemaVersion is the schema version this build writes.
const SchemaVersion = 11

// migrate brings the database to SchemaVersion, one transaction per step,
// and refuses a database from a newer build. The version is read inside a
// write transaction so two processes opening a new file do not both create
// the tables.
func migrate(ctx context.Context, db *sql.DB, path string) error {
	if len(migrations) != SchemaVersion {
		panic("sqlite: SchemaVersion does not match the migrations")
	}
	for {
		done, err := migrateStep(ctx, db, path)
		if err != nil || done {
			return err
		}
	}
}

func migrateStep(ctx context.Context, db *sql.DB, path string) (done bool, err error) {
	tx, err := db.BeginTx(ctx, nil) // BEGIN IMMEDIATE (see dsn)
	if err != nil {
		return false, fmt.Errorf("sqlite store %s: begin migration: %w", path, err)
	}
	defer func() {
		if err != nil {
			tx.Rollback()
		}
	}()
	var v int
	if err := tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
		return false, fmt.Errorf("sqlite store %s: read schema version: %w", path, err)
	}
	switch {
	case v > SchemaVersion:
		return false, fmt.Errorf("sqlite store %s: schema version %d was written by a newer agentloop; this build knows up to version %d — upgrade agentloop or use another database file: %w", path, v, SchemaVersion, ErrNewerSchema)
	case v == SchemaVersion:
		return true, tx.Rollback()
	}
	if _, err := tx.ExecContext(ctx, migrations[v]); err != nil {
		return false, fmt.Errorf("sqlite store %s: migrate schema to version %d: %w", path, v+1, err)
	}
	if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", v+1)); err != nil {
		return false, fmt.Errorf("sqlite store %s: set schema version %d: %w", path, v+1, err)
	}
	if err := tx.Commit(); err != nil {
		return false, fmt.Errorf("sqlite store %s: commit schema version %d: %w", path, v+1, err)
	}
	return false, nil
}
