// Package sqlite is the embedded default Store: one SQLite file in WAL mode,
// written by a single goroutine that group-commits the appends of every
// session, and read through a separate pool of read-only connections.
//
// Durability: the database runs with synchronous=NORMAL. A committed
// append survives a crash of the process (panic, SIGKILL, OOM kill); a power
// loss or kernel crash may lose the last few commits, but never tears an
// event or leaves a log with a gap.
//
// Cancellation: an Append whose context is done before the writer takes it
// returns ctx.Err() and writes nothing. Once the writer has taken it into a
// batch, it is written, and Append waits for the commit and reports its
// outcome even if the context ends meanwhile: the caller always learns
// whether its events are stored.
package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/store"
	"github.com/agentloop/agentloop/store/internal/appendq"
	"github.com/agentloop/agentloop/store/internal/eventbatch"
)

// Store is a SQLite-backed store.Store. It is safe for concurrent use.
type Store struct {
	path string
	opts options

	wdb    *sql.DB // one connection, used only by the writer goroutine
	rdb    *sql.DB // read-only pool for Load and List
	loadSt *sql.Stmt
	// existsSt tells an empty LoadAfter of a known session from an
	// unknown one.
	existsSt *sql.Stmt

	// watchers are notified by the writer goroutine after each commit.
	watchers store.Watchers

	reqs chan *request
	// mu guards closed against sends on reqs: Append sends holding the
	// read lock, Close sets closed and closes reqs holding the write lock.
	mu       sync.RWMutex
	closed   bool
	isClosed atomic.Bool // for readers, which do not take mu
	done     chan struct{}
	w        *writer
	pace     appendq.Pace // the writer's
	ckpt     *checkpointer

	closeOnce sync.Once
	closeErr  error
}

var _ store.Store = (*Store)(nil)

type options struct {
	clock       func() time.Time
	maxBatch    int
	readConns   int
	busyTimeout time.Duration
	cacheSize   int
	readOnly    bool
	interval    time.Duration
}

// Option configures Open.
type Option func(*options)

// WithMaxBatch caps how many events the writer puts in one transaction
// (default 1024). A single Append larger than the cap is still written whole.
func WithMaxBatch(n int) Option { return func(o *options) { o.maxBatch = max(1, n) } }

// DefaultCommitInterval is the commit interval unless WithCommitInterval
// sets another.
const DefaultCommitInterval = 2 * time.Millisecond

// WithCommitInterval sets how long the writer may hold appends nobody
// waits for (AppendAsync) after a commit, so that more share the next one
// (default 2ms; 0 commits each at once). A plain Append is never held. It
// is the most a watcher's view of a session lags behind a fast session.
func WithCommitInterval(d time.Duration) Option { return func(o *options) { o.interval = max(0, d) } }

// WithReadConns sets the size of the read connection pool (default
// max(4, GOMAXPROCS)).
func WithReadConns(n int) Option { return func(o *options) { o.readConns = max(1, n) } }

// WithBusyTimeout sets how long a connection waits for a lock held by
// another process before failing (default 10s). Within one process the
// writer and readers never wait on each other.
func WithBusyTimeout(d time.Duration) Option { return func(o *options) { o.busyTimeout = d } }

// ReadOnly opens the database for reading only — a file or directory this
// process may not write: everything can be read, every write fails with
// ErrReadOnly. The schema must be current already.
func ReadOnly() Option { return func(o *options) { o.readOnly = true } }

// ErrReadOnly is returned (wrapped) by writes to a store opened ReadOnly.
var ErrReadOnly = errors.New("the session database is read-only here (this user may not write the file or its directory): it can be read, not written")

// WithClock sets the time source of leases and controls (default time.Now).
func WithClock(now func() time.Time) Option { return func(o *options) { o.clock = now } }

// Open opens (creating if needed) the database at path and migrates it to
// the current schema. It fails with ErrNewerSchema if a newer agentloop
// wrote the file.
func Open(path string, opts ...Option) (*Store, error) {
	o := options{
		clock:       time.Now,
		maxBatch:    1024,
		readConns:   max(4, runtime.GOMAXPROCS(0)),
		busyTimeout: 10 * time.Second,
		cacheSize:   10000,
		interval:    DefaultCommitInterval,
	}
	for _, opt := range opts {
		opt(&o)
	}
	if path == "" || path == ":memory:" || strings.HasPrefix(path, "file:") {
		return nil, fmt.Errorf("sqlite store: %q is not a file path — give the path of a database file (an in-memory database cannot be shared by the writer and the readers; use store/memory)", path)
	}
	ctx := context.Background()
	if o.readOnly {
		return openReadOnly(ctx, path, o)
	}

	wdb, err := sql.Open(driverName, dsn(path, o, false))
	if err != nil {
		return nil, fmt.Errorf("sqlite store %s: open: %w", path, err)
	}
	wdb.SetMaxOpenConns(1)
	wdb.SetMaxIdleConns(1)
	wdb.SetConnMaxLifetime(0)
	wdb.SetConnMaxIdleTime(0)
	if err := checkWAL(ctx, wdb, path); err != nil {
		wdb.Close()
		return nil, err
	}
	if err := refuseEndJournals(path); err != nil {
		wdb.Close()
		return nil, err
	}
	if err := migrate(ctx, wdb, path); err != nil {
		wdb.Close()
		return nil, err
	}

	rdb, loadSt, existsSt, err := openReaders(ctx, path, dsn(path, o, true), o.readConns)
	if err != nil {
		wdb.Close()
		return nil, err
	}
	w, err := newWriter(ctx, wdb, path, o.cacheSize)
	if err != nil {
		existsSt.Close()
		loadSt.Close()
		rdb.Close()
		wdb.Close()
		return nil, err
	}
	ckpt, err := newCheckpointer(ctx, path, dsn(path, o, false))
	if err != nil {
		w.close()
		existsSt.Close()
		loadSt.Close()
		rdb.Close()
		wdb.Close()
		return nil, err
	}
	s := &Store{
		path:     path,
		opts:     o,
		wdb:      wdb,
		rdb:      rdb,
		loadSt:   loadSt,
		existsSt: existsSt,
		reqs:     make(chan *request, o.maxBatch),
		done:     make(chan struct{}),
		w:        w,
		pace:     appendq.Pace{Interval: o.interval},
		ckpt:     ckpt,
	}
	w.watchers = &s.watchers
	w.clock = o.clock
	go s.run()
	return s, nil
}

// openReaders opens the read-only pool and prepares the statements every
// Load uses.
func openReaders(ctx context.Context, path, dsn string, conns int) (rdb *sql.DB, loadSt, existsSt *sql.Stmt, err error) {
	if rdb, err = sql.Open(driverName, dsn); err != nil {
		return nil, nil, nil, fmt.Errorf("sqlite store %s: open readers: %w", path, err)
	}
	rdb.SetMaxOpenConns(conns)
	rdb.SetMaxIdleConns(conns)
	if loadSt, err = rdb.PrepareContext(ctx, loadAfterSQL); err != nil {
		rdb.Close()
		return nil, nil, nil, fmt.Errorf("sqlite store %s: prepare load: %w", path, err)
	}
	if existsSt, err = rdb.PrepareContext(ctx, `SELECT 1 FROM sessions WHERE id = ?`); err != nil {
		loadSt.Close()
		rdb.Close()
		return nil, nil, nil, fmt.Errorf("sqlite store %s: prepare load: %w", path, err)
	}
	return rdb, loadSt, existsSt, nil
}

// openReadOnly opens only the reading side, on a file that may not be
// writable (nor its directory, so no -shm file can be made: immutable).
func openReadOnly(ctx context.Context, path string, o options) (*Store, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("sqlite store %s: %w", path, err)
	}
	rdb, loadSt, existsSt, err := openReaders(ctx, path, dsn(path, o, true)+"&mode=ro&immutable=1", o.readConns)
	if err != nil {
		return nil, err
	}
	var v int
	err = rdb.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v)
	if err == nil && v != SchemaVersion {
		err = fmt.Errorf("the database is at schema %d and needs migrating to %d, but it is read-only here (open it once where it can be written)", v, SchemaVersion)
		if v > SchemaVersion {
			err = fmt.Errorf("schema %d, this build knows %d: %w", v, SchemaVersion, ErrNewerSchema)
		}
	}
	if err != nil {
		loadSt.Close()
		existsSt.Close()
		rdb.Close()
		return nil, fmt.Errorf("sqlite store %s: open read-only: %w", path, err)
	}
	s := &Store{path: path, opts: o, rdb: rdb, loadSt: loadSt, existsSt: existsSt, done: make(chan struct{})}
	close(s.done)
	return s, nil
}

// ReadOnly reports whether the store was opened read-only.
func (s *Store) ReadOnly() bool { return s.opts.readOnly }

// loadAfterSQL reads the batches holding a session's events past a
// sequence number: a range scan of the UNIQUE (session_id, last_seq)
// index, in its order (a test checks the plan). Batches do not overlap, so
// that is also the order of their events.
const loadAfterSQL = `SELECT first_seq, last_seq, events FROM event_batches WHERE session_id = ? AND last_seq > ? ORDER BY last_seq`

// Path returns the database file's path.
func (s *Store) Path() string { return s.path }

// dsn builds the connection string. Both drivers the package was measured
// with (modernc.org/sqlite and mattn/go-sqlite3) understand these keys.
func dsn(path string, o options, readOnly bool) string {
	// A file: URI, so that '?' or '#' in the path cannot be taken for
	// parameters.
	r := strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23")
	var b strings.Builder
	b.WriteString("file:")
	b.WriteString(r.Replace(path))
	fmt.Fprintf(&b, "?_busy_timeout=%d", o.busyTimeout.Milliseconds())
	if readOnly {
		b.WriteString("&_query_only=1")
	} else {
		b.WriteString("&_journal_mode=WAL&_synchronous=NORMAL&_foreign_keys=1&_txlock=immediate")
	}
	return b.String()
}

// checkWAL makes sure the database is in WAL mode. Opening a connection
// switches it (the DSN's journal mode), and that can fail at once with
// "database is locked", without SQLite's busy timeout, while another
// process closes its last connection (which checkpoints and removes the
// WAL): it is tried again as writes are (whileLocked).
func checkWAL(ctx context.Context, db *sql.DB, path string) error {
	var mode string
	if err := whileLocked(func() error { return db.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode) }); err != nil {
		return fmt.Errorf("sqlite store %s: open: %w", path, err)
	}
	if !strings.EqualFold(mode, "wal") {
		return fmt.Errorf("sqlite store %s: could not switch the database to WAL mode (journal_mode is %q) — is the file on a network file system?", path, mode)
	}
	return nil
}

// request is one write waiting for the writer: an append, or an op run in
// a transaction of its own (leases, controls, deletes).
type request struct {
	*appendq.Request
	op func(ctx context.Context, w *writer) error
}

// AppendAcquiring appends events of one session and takes its lease in
// the same transaction, both or neither; see store.LeaseStarter.
func (s *Store) AppendAcquiring(ctx context.Context, owner string, ttl time.Duration, events ...loop.Event) (store.Lease, error) {
	done := make(chan error, 1)
	q, err := appendq.New(ctx, events, false, 0, done, nil)
	if err != nil {
		return store.Lease{}, err
	}
	if q == nil || len(q.Runs) != 1 {
		return store.Lease{}, fmt.Errorf("sqlite store %s: append and acquire: want the events of one session", s.path)
	}
	q.Acquire = &appendq.Acquisition{Owner: owner, TTL: ttl}
	r := &request{Request: q}
	if err := s.send(ctx, r, "append to session "+q.Runs[0].SessionID); err != nil {
		return store.Lease{}, err
	}
	if err := r.Wait(ctx, done); err != nil {
		return store.Lease{}, err
	}
	a := q.Acquire
	return store.Lease{SessionID: q.Runs[0].SessionID, Owner: owner, Token: a.Token, Expires: a.Expires}, nil
}

// Append writes events durably, all or nothing. See the package
// documentation for how cancellation behaves.
func (s *Store) Append(ctx context.Context, events ...loop.Event) error {
	return s.appendSync(ctx, events, false, 0)
}

// AppendFenced is Append that succeeds only while token is the session's
// current lease token (see store.Leases).
func (s *Store) AppendFenced(ctx context.Context, token int64, events ...loop.Event) error {
	return s.appendSync(ctx, events, true, token)
}

// AppendFencedAsync is AppendAsync with AppendFenced's check.
func (s *Store) AppendFencedAsync(ctx context.Context, token int64, events []loop.Event, done func(error)) {
	r, err := s.enqueueFenced(ctx, events, nil, done, true, token)
	if err != nil || r == nil {
		done(err)
	}
}

func (s *Store) appendSync(ctx context.Context, events []loop.Event, fenced bool, token int64) error {
	done := make(chan error, 1)
	r, err := s.enqueueFenced(ctx, events, done, nil, fenced, token)
	if err != nil || r == nil {
		return err
	}
	return r.Wait(ctx, done)
}

// AppendAsync queues events and returns at once; done is called exactly
// once, on the writer's goroutine (or the caller's, for an append refused
// before it was queued), when they are durable or failed. The runner uses
// it to overlap a commit with its next steps.
func (s *Store) AppendAsync(ctx context.Context, events []loop.Event, done func(error)) {
	r, err := s.enqueue(ctx, events, nil, done)
	if err != nil || r == nil {
		done(err)
	}
}

// enqueue validates and encodes events and hands them to the writer, which
// will send the outcome on done. A nil request and error means there was
// nothing to write.
func (s *Store) enqueue(ctx context.Context, events []loop.Event, done chan<- error, notify func(error)) (*request, error) {
	return s.enqueueFenced(ctx, events, done, notify, false, 0)
}

func (s *Store) enqueueFenced(ctx context.Context, events []loop.Event, done chan<- error, notify func(error), fenced bool, token int64) (*request, error) {
	q, err := appendq.New(ctx, events, fenced, token, done, notify)
	if err != nil || q == nil {
		return nil, err
	}
	r := &request{Request: q}
	if err := s.send(ctx, r, "append to session "+q.Runs[0].SessionID); err != nil {
		return nil, err
	}
	return r, nil
}

// send hands a request to the writer.
func (s *Store) send(ctx context.Context, r *request, what string) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.opts.readOnly {
		return fmt.Errorf("sqlite store %s: %s: %w", s.path, what, ErrReadOnly)
	}
	if s.closed {
		return fmt.Errorf("sqlite store %s: %s: %w", s.path, what, store.ErrClosed)
	}
	select {
	case s.reqs <- r:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// exec runs op on the writer goroutine, in a transaction of its own, and
// waits for its outcome.
func (s *Store) exec(ctx context.Context, what string, op func(ctx context.Context, w *writer) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	done := make(chan error, 1)
	r := &request{Request: appendq.Op(ctx, done), op: op}
	if err := s.send(ctx, r, what); err != nil {
		return err
	}
	return r.Wait(ctx, done)
}

// Load returns a session's events in order, or loop.ErrNotFound.
func (s *Store) Load(ctx context.Context, sessionID string) ([]loop.Event, error) {
	return s.LoadAfter(ctx, sessionID, 0)
}

// Watch calls fn on the writer goroutine after each commit, once per
// session written, in commit order; fn must not block (see store.Watchers).
// The notice's Events are a copy the caller of Append cannot change.
func (s *Store) Watch(fn func(store.Notice)) (stop func()) { return s.watchers.Watch(fn) }

// LoadAfter returns a session's events with Seq > after, in order: an
// empty slice when there are none, loop.ErrNotFound when the session does
// not exist. It reads only those rows, through the (session_id, seq) index.
func (s *Store) LoadAfter(ctx context.Context, sessionID string, after int64) ([]loop.Event, error) {
	if s.isClosed.Load() {
		return nil, fmt.Errorf("sqlite store %s: load session %s: %w", s.path, sessionID, store.ErrClosed)
	}
	after = max(after, 0)
	rows, err := s.loadSt.QueryContext(ctx, sessionID, after)
	if err != nil {
		return nil, s.readErr(fmt.Sprintf("load session %s", sessionID), err)
	}
	defer rows.Close()
	var (
		events      []loop.Event
		first, last int64
		batch       sql.RawBytes
	)
	for rows.Next() {
		if err := rows.Scan(&first, &last, &batch); err != nil {
			return nil, s.readErr(fmt.Sprintf("load session %s", sessionID), err)
		}
		if events, err = eventbatch.Decode(events, sessionID, after, first, last, batch); err != nil {
			return nil, fmt.Errorf("sqlite store %s: %w", s.path, err)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, s.readErr(fmt.Sprintf("load session %s", sessionID), err)
	}
	if len(events) == 0 {
		var one int
		err := s.existsSt.QueryRowContext(ctx, sessionID).Scan(&one)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return nil, fmt.Errorf("session %s: %w", sessionID, loop.ErrNotFound)
		case err != nil:
			return nil, s.readErr(fmt.Sprintf("load session %s", sessionID), err)
		}
		return []loop.Event{}, nil
	}
	return events, nil
}

// finished lists the statuses for which loop.Status.Finished is true; a
// test keeps the two in step.
var finished = []loop.Status{loop.StatusCompleted, loop.StatusFailed, loop.StatusTerminated, loop.StatusError}

// listSQL builds List's query and its arguments. The tenant and workspace
// indexes hold only sessions that have one (schema version 8), so a filter
// on either also states that it is not empty: SQLite uses a partial index
// only for a query whose WHERE has its WHERE's terms.
func listSQL(f store.Filter) (string, []any) {
	var (
		q    strings.Builder
		args []any
		and  = " WHERE "
	)
	q.WriteString(`SELECT id, task, model, status, reason, iteration, tokens, cost_usd, created_at, updated_at, last_seq, tenant, workspace, labels, max_iterations, forked_from, forked_at FROM sessions`)
	in := func(list []loop.Status) string {
		marks := make([]string, len(list))
		for i, st := range list {
			marks[i] = "?"
			args = append(args, string(st))
		}
		return "(" + strings.Join(marks, ", ") + ")"
	}
	if len(f.Status) > 0 {
		q.WriteString(and + "status IN " + in(f.Status))
		and = " AND "
	}
	if f.Unfinished {
		q.WriteString(and + "status NOT IN " + in(finished))
		and = " AND "
	}
	if f.Tenant != "" {
		// The term the tenant index's WHERE needs to be usable.
		q.WriteString(and + "tenant = ? AND tenant <> ''")
		args = append(args, f.Tenant)
		and = " AND "
	}
	if !f.CreatedAfter.IsZero() {
		q.WriteString(and + "created_at >= ?")
		args = append(args, encodeTime(f.CreatedAfter))
		and = " AND "
	}
	if !f.CreatedBefore.IsZero() {
		q.WriteString(and + "created_at < ?")
		args = append(args, encodeTime(f.CreatedBefore))
		and = " AND "
	}
	if f.Workspace != "" {
		q.WriteString(and + "workspace = ? AND workspace <> ''")
		args = append(args, f.Workspace)
		and = " AND "
	}
	if f.ForkedFrom != "" {
		// The term the forked_from index's WHERE needs to be usable.
		q.WriteString(and + "forked_from = ? AND forked_from <> ''")
		args = append(args, f.ForkedFrom)
		and = " AND "
	}
	for k, v := range f.Labels {
		q.WriteString(and + "labels <> '' AND json_extract(labels, ?) = ?")
		args = append(args, labelPath(k), v)
		and = " AND "
	}
	q.WriteString(" ORDER BY created_at DESC, id DESC")
	if f.Limit > 0 || f.Offset > 0 {
		limit := int64(-1)
		if f.Limit > 0 {
			limit = int64(f.Limit)
		}
		q.WriteString(" LIMIT ? OFFSET ?")
		args = append(args, limit, max(0, f.Offset))
	}
	return q.String(), args
}

// List returns session summaries, newest first (by creation time, then by
// ID, both descending).
func (s *Store) List(ctx context.Context, f store.Filter) ([]loop.Summary, error) {
	if s.isClosed.Load() {
		return nil, fmt.Errorf("sqlite store %s: list: %w", s.path, store.ErrClosed)
	}
	q, args := listSQL(f)
	rows, err := s.rdb.QueryContext(ctx, q, args...)
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
	if err := rows.Err(); err != nil {
		return nil, s.readErr("list sessions", err)
	}
	return out, nil
}

// scanSummary reads the summary columns, in the order of the List query
// (without id when withID is false).
func scanSummary(row interface{ Scan(...any) error }, sum *loop.Summary, withID bool) error {
	var status, reason, labels, forkedFrom string
	var created, updated int64
	var forkedAt int
	dest := []any{&sum.Task, &sum.Model, &status, &reason, &sum.Iteration, &sum.Tokens, &sum.CostUSD, &created, &updated, &sum.LastSeq, &sum.Tenant, &sum.Workspace, &labels, &sum.MaxIterations, &forkedFrom, &forkedAt}
	if withID {
		dest = append([]any{&sum.ID}, dest...)
	}
	if err := row.Scan(dest...); err != nil {
		return err
	}
	sum.Status, sum.Reason = loop.Status(status), loop.StopReason(reason)
	if forkedFrom != "" {
		sum.ForkedFrom = &loop.ForkedFrom{ID: forkedFrom, Iteration: forkedAt}
	}
	if labels != "" {
		if err := json.Unmarshal([]byte(labels), &sum.Labels); err != nil {
			return fmt.Errorf("labels of session %s: %w", sum.ID, err)
		}
	}
	sum.CreatedAt, sum.UpdatedAt = decodeTime(created), decodeTime(updated)
	return nil
}

func (s *Store) readErr(what string, err error) error {
	if s.isClosed.Load() {
		return fmt.Errorf("sqlite store %s: %s: %w", s.path, what, store.ErrClosed)
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return fmt.Errorf("sqlite store %s: %s: %w", s.path, what, err)
}

// Close writes every append already queued, stops the writer and closes the
// database. Appends after Close fail with store.ErrClosed.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		if s.opts.readOnly {
			s.isClosed.Store(true)
			s.closeErr = errors.Join(s.loadSt.Close(), s.existsSt.Close(), s.rdb.Close())
			return
		}
		s.mu.Lock()
		s.closed = true
		close(s.reqs)
		s.mu.Unlock()
		<-s.done
		s.isClosed.Store(true)
		// Readers and the checkpointer first, so the writer's connection is
		// the last one and SQLite checkpoints the WAL into the main file as
		// it closes.
		s.closeErr = errors.Join(s.loadSt.Close(), s.existsSt.Close(), s.rdb.Close(), s.ckpt.close(), s.w.close(), s.wdb.Close())
		if s.closeErr != nil {
			s.closeErr = fmt.Errorf("sqlite store %s: close: %w", s.path, s.closeErr)
		}
	})
	return s.closeErr
}

// Times are stored as Unix nanoseconds, as in a batch's frames
// (eventbatch.UnixNano).
func encodeTime(t time.Time) int64 { return eventbatch.UnixNano(t) }

func decodeTime(n int64) time.Time { return eventbatch.Time(n) }

// encodeLabels stores labels as a JSON object, "" for none.
func encodeLabels(l map[string]string) string {
	if len(l) == 0 {
		return ""
	}
	b, _ := json.Marshal(l)
	return string(b)
}

// labelPath is the JSON path of a label key, quoted so any key is one
// member name.
func labelPath(k string) string {
	b, _ := json.Marshal(k)
	return "$." + string(b)
}

// forkedFromID and forkedFromAt are the summary columns of a fork's
// origin: empty and zero for a session that is not a fork.
func forkedFromID(f *loop.ForkedFrom) string {
	if f == nil {
		return ""
	}
	return f.ID
}

func forkedFromAt(f *loop.ForkedFrom) int {
	if f == nil {
		return 0
	}
	return f.Iteration
}
