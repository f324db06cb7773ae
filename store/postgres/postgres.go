// Package postgres is the Store for several agentloop servers sharing one
// PostgreSQL database (pgx v5). It keeps the same contract as store/sqlite
// and passes the same conformance suite:
//
//   - an append-only log of batches, one row per append holding its
//     events (first_seq..last_seq, framed as store/internal/eventbatch
//     says), with the session's summary row updated in the same
//     transaction;
//   - appends from every session of this process are group-committed by one
//     writer goroutine, many per transaction — in the common case (each
//     append continues a log where this writer left it, or begins one) the
//     whole transaction is one round trip; a session's row is updated
//     only if its log still ends where the writer thinks, so two processes
//     can never interleave a log;
//   - fenced appends check the lease token under a row lock that an
//     Acquire by another server must wait for, so the check and the write
//     are one atomic step;
//   - every commit NOTIFYs agentloop_events with (tenant, session, seq), so
//     watchers in every server learn of every session's progress; payloads
//     are read from the table.
//
// Payloads are stored as the exact bytes written, not as jsonb: jsonb
// rewrites key order and spacing, and a tool call's arguments must come
// back byte for byte (approvals hash them). A batch reads as text, one
// event per two lines: SELECT convert_from(events, 'UTF8') FROM
// event_batches.
package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/store"
	"github.com/agentloop/agentloop/store/internal/eventbatch"
)

// Store is a PostgreSQL-backed store.Store, safe for concurrent use by
// any number of goroutines and processes.
type Store struct {
	name   string // the database, for error messages (no password)
	opts   options
	pool   *pgxpool.Pool
	origin string // tells this store's own notifications from others'

	watchers store.Watchers

	reqs     chan *request
	mu       sync.RWMutex // guards closed against sends on reqs
	closed   bool
	isClosed atomic.Bool
	done     chan struct{}
	w        *writer

	stopListen context.CancelFunc
	listenDone chan struct{}

	closeOnce sync.Once
}

var _ store.Store = (*Store)(nil)

type options struct {
	clock    func() time.Time
	maxBatch int
	maxConns int32
	listen   bool
}

// Option configures Open.
type Option func(*options)

// WithClock sets the time source of leases, controls, keys and prompts
// (default time.Now). Servers sharing a database should keep their clocks
// in step: a lease is expired when the reader's clock says so.
func WithClock(now func() time.Time) Option { return func(o *options) { o.clock = now } }

// WithMaxBatch caps how many events one commit carries (default 1024).
func WithMaxBatch(n int) Option { return func(o *options) { o.maxBatch = max(1, n) } }

// WithMaxConns sets the size of the connection pool (default 16; the writer
// and the listener hold one each). A pool_max_conns in the URL wins.
func WithMaxConns(n int) Option { return func(o *options) { o.maxConns = int32(max(3, n)) } }

// WithoutListen turns off LISTEN: watchers see only this process's commits.
// For tools that never watch (migrations, key management).
func WithoutListen() Option { return func(o *options) { o.listen = false } }

// Open connects to the database at url (postgres://user:pass@host:port/db?…),
// migrates it to the current schema and starts the writer and the listener.
func Open(ctx context.Context, url string, opts ...Option) (*Store, error) {
	o := options{clock: time.Now, maxBatch: 1024, maxConns: 16, listen: true}
	for _, opt := range opts {
		opt(&o)
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		// pgx's parse errors show the URL with its password masked.
		return nil, fmt.Errorf("postgres store: %w (want postgres://USER:PASSWORD@HOST:PORT/DATABASE)", err)
	}
	name := cfg.ConnConfig.Database + " on " + cfg.ConnConfig.Host + ":" + strconv.Itoa(int(cfg.ConnConfig.Port))
	if !strings.Contains(url, "pool_max_conns") {
		cfg.MaxConns = o.maxConns
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres store %s: %w", name, err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres store %s: cannot connect: %w (is PostgreSQL running there, does the database exist, and are the user and password in the URL right?)", name, err)
	}
	if _, _, err := Migrate(ctx, pool); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres store %s: %w", name, err)
	}
	var id [8]byte
	_, _ = rand.Read(id[:])
	s := &Store{name: name, opts: o, pool: pool, origin: hex.EncodeToString(id[:]),
		reqs: make(chan *request, o.maxBatch), done: make(chan struct{})}
	conn, err := s.writerConn(ctx)
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres store %s: writer connection: %w", name, err)
	}
	s.w = &writer{s: s, conn: conn, cache: map[string]loop.Summary{}, cacheSize: 10000}
	go s.run()
	if o.listen {
		lctx, cancel := context.WithCancel(context.Background())
		s.stopListen, s.listenDone = cancel, make(chan struct{})
		ready := make(chan error, 1)
		go s.listen(lctx, ready)
		if err := <-ready; err != nil {
			s.Close()
			return nil, fmt.Errorf("postgres store %s: listen: %w", name, err)
		}
	}
	return s, nil
}

// Name says which database the store is on (no password).
func (s *Store) Name() string { return s.name }

// Pool is the store's connection pool, for tools and tests.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

func (s *Store) errf(format string, args ...any) error {
	return fmt.Errorf("postgres store %s: "+format, append([]any{s.name}, args...)...)
}

func (s *Store) checkOpen(what string) error {
	if s.isClosed.Load() {
		return s.errf("%s: %w", what, store.ErrClosed)
	}
	return nil
}

// readErr wraps a read failure; a cancelled context stays recognisable.
func (s *Store) readErr(what string, err error) error {
	if err == nil {
		return nil
	}
	if s.isClosed.Load() {
		return s.errf("%s: %w", what, store.ErrClosed)
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return s.errf("%s: %w", what, err)
}

// Watch calls fn after every commit of any server on this database (see
// store.Watchers): this process's own commits carry their events, others'
// carry only the sequence number.
func (s *Store) Watch(fn func(store.Notice)) (stop func()) { return s.watchers.Watch(fn) }

// Load returns a session's events in order, or loop.ErrNotFound.
func (s *Store) Load(ctx context.Context, id string) ([]loop.Event, error) {
	return s.LoadAfter(ctx, id, 0)
}

// LoadAfter returns a session's events with Seq > after, in order.
func (s *Store) LoadAfter(ctx context.Context, id string, after int64) ([]loop.Event, error) {
	if err := s.checkOpen("load session " + id); err != nil {
		return nil, err
	}
	after = max(after, 0)
	rows, err := s.pool.Query(ctx, `SELECT first_seq, last_seq, events FROM event_batches WHERE session_id = $1 AND last_seq > $2 ORDER BY last_seq`, id, after)
	if err != nil {
		return nil, s.readErr("load session "+id, err)
	}
	defer rows.Close()
	var (
		events      []loop.Event
		first, last int64
		batch       []byte
	)
	for rows.Next() {
		if err := rows.Scan(&first, &last, &batch); err != nil {
			return nil, s.readErr("load session "+id, err)
		}
		if events, err = eventbatch.Decode(events, id, after, first, last, batch); err != nil {
			return nil, s.errf("%w", err)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, s.readErr("load session "+id, err)
	}
	if len(events) == 0 {
		var one int
		err := s.pool.QueryRow(ctx, `SELECT 1 FROM sessions WHERE id = $1`, id).Scan(&one)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			return nil, fmt.Errorf("session %s: %w", id, loop.ErrNotFound)
		case err != nil:
			return nil, s.readErr("load session "+id, err)
		}
		return []loop.Event{}, nil
	}
	return events, nil
}

// finished lists the statuses for which loop.Status.Finished is true.
var finished = []string{string(loop.StatusCompleted), string(loop.StatusFailed), string(loop.StatusTerminated), string(loop.StatusError)}

const summaryCols = `tenant, task, model, status, reason, iteration, max_iterations, tokens, cost_usd, created_at, updated_at, last_seq, workspace, labels, forked_from, forked_at`

// List returns session summaries, newest first (by creation time, then ID).
func (s *Store) List(ctx context.Context, f store.Filter) ([]loop.Summary, error) {
	if err := s.checkOpen("list"); err != nil {
		return nil, err
	}
	var (
		q    strings.Builder
		args []any
		and  = " WHERE "
	)
	arg := func(v any) string { args = append(args, v); return "$" + strconv.Itoa(len(args)) }
	cond := func(c string) { q.WriteString(and + c); and = " AND " }
	q.WriteString(`SELECT id, ` + summaryCols + ` FROM sessions`)
	if len(f.Status) > 0 {
		st := make([]string, len(f.Status))
		for i, x := range f.Status {
			st[i] = string(x)
		}
		cond("status = ANY(" + arg(st) + ")")
	}
	if f.Unfinished {
		cond("NOT (status = ANY(" + arg(finished) + "))")
	}
	if f.Tenant != "" {
		cond("tenant = " + arg(f.Tenant))
	}
	if !f.CreatedAfter.IsZero() {
		cond("created_at >= " + arg(f.CreatedAfter))
	}
	if !f.CreatedBefore.IsZero() {
		cond("created_at < " + arg(f.CreatedBefore))
	}
	if f.Workspace != "" {
		cond("workspace = " + arg(f.Workspace))
	}
	if f.ForkedFrom != "" {
		cond("forked_from = " + arg(f.ForkedFrom) + " AND forked_from <> ''") // the partial index's WHERE
	}
	if len(f.Labels) > 0 {
		b, _ := json.Marshal(f.Labels)
		cond("labels @> " + arg(string(b)) + "::jsonb")
	}
	q.WriteString(" ORDER BY created_at DESC, id DESC")
	if f.Limit > 0 {
		q.WriteString(" LIMIT " + arg(f.Limit))
	}
	if f.Offset > 0 {
		q.WriteString(" OFFSET " + arg(f.Offset))
	}
	rows, err := s.pool.Query(ctx, q.String(), args...)
	if err != nil {
		return nil, s.readErr("list sessions", err)
	}
	defer rows.Close()
	var out []loop.Summary
	for rows.Next() {
		var sum loop.Summary
		if err := scanSummary(rows, &sum, true); err != nil {
			return nil, s.readErr("list sessions", err)
		}
		out = append(out, sum)
	}
	return out, s.readErr("list sessions", rows.Err())
}

// scanSummary reads id (when withID) and summaryCols.
func scanSummary(row pgx.Row, sum *loop.Summary, withID bool) error {
	var status, reason, forkedFrom string
	var labels []byte
	var created, updated time.Time
	var forkedAt int
	dest := []any{&sum.Tenant, &sum.Task, &sum.Model, &status, &reason, &sum.Iteration, &sum.MaxIterations, &sum.Tokens, &sum.CostUSD,
		&created, &updated, &sum.LastSeq, &sum.Workspace, &labels, &forkedFrom, &forkedAt}
	if withID {
		dest = append([]any{&sum.ID}, dest...)
	}
	if err := row.Scan(dest...); err != nil {
		return err
	}
	sum.Status, sum.Reason = loop.Status(status), loop.StopReason(reason)
	sum.CreatedAt, sum.UpdatedAt = decodeTime(created), decodeTime(updated)
	if forkedFrom != "" {
		sum.ForkedFrom = &loop.ForkedFrom{ID: forkedFrom, Iteration: forkedAt}
	}
	if len(labels) > 0 && string(labels) != "{}" {
		if err := json.Unmarshal(labels, &sum.Labels); err != nil {
			return fmt.Errorf("labels of session %s: %w", sum.ID, err)
		}
	}
	return nil
}

// Delete removes a session: its log, summary and controls; its lease row
// stays, expired, so a later holder of the ID gets a larger token.
func (s *Store) Delete(ctx context.Context, id string) error {
	if err := s.checkOpen("delete session " + id); err != nil {
		return err
	}
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `DELETE FROM sessions WHERE id = $1`, id)
		if err != nil {
			return s.errf("delete session %s: %w", id, err)
		}
		if tag.RowsAffected() == 0 {
			return fmt.Errorf("session %s: %w", id, store.ErrNotFound)
		}
		for _, q := range []string{`DELETE FROM event_batches WHERE session_id = $1`, `UPDATE leases SET expires_at = 'epoch' WHERE session_id = $1`, `DELETE FROM controls WHERE session_id = $1`} {
			if _, err := tx.Exec(ctx, q, id); err != nil {
				return s.errf("delete session %s: %w", id, err)
			}
		}
		return nil
	})
}

// Close writes every append already queued, stops the writer and the
// listener and closes the pool.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.closed = true
		close(s.reqs)
		s.mu.Unlock()
		<-s.done
		if s.stopListen != nil {
			s.stopListen()
			<-s.listenDone
		}
		s.isClosed.Store(true)
		if s.w.conn != nil {
			// Closed first: the pool destroys it rather than lend a
			// reader the writer's planner settings (writerConn).
			s.w.conn.Conn().Close(context.Background())
			s.w.conn.Release()
		}
		s.pool.Close()
	})
	return nil
}

// Times: PostgreSQL keeps microseconds. The zero time.Time is stored as
// year 1, which PostgreSQL represents; everything read is UTC.
func encodeTime(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

// frameTime is an event's time as its batch keeps it: Unix nanoseconds of
// the microsecond PostgreSQL keeps the summary's times to, so that an
// event and the summary it made agree.
func frameTime(t time.Time) int64 { return eventbatch.UnixNano(encodeTime(t)) }

func decodeTime(t time.Time) time.Time {
	if t.Year() == 1 && t.Equal(time.Time{}) {
		return time.Time{}
	}
	return t.UTC()
}
