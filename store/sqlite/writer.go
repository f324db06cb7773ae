package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/store"
	"github.com/agentloop/agentloop/store/internal/appendcheck"
)

// run is the writer goroutine: it takes whatever appends are queued (up to
// maxBatch events), writes them in one transaction and answers each.
func (s *Store) run() {
	defer close(s.done)
	var batch []*request
	for {
		r, ok := <-s.reqs
		if !ok {
			return
		}
		if r.op != nil {
			s.w.runOp(r)
			continue
		}
		batch = append(batch[:0], r)
		n := r.Size()
	drain:
		for n < s.opts.maxBatch {
			select {
			case r, ok := <-s.reqs:
				if !ok {
					break drain // closed: write this batch, then stop
				}
				if r.op != nil {
					// Keep order: the batch so far first, then the op.
					s.w.write(batch)
					clear(batch)
					batch = batch[:0]
					s.w.runOp(r)
					continue
				}
				batch = append(batch, r)
				n += r.Size()
			default:
				break drain
			}
		}
		s.w.write(batch)
		clear(batch) // drop references for the GC
	}
}

// writer owns the write connection and the cache of session summaries.
// It holds the connection for its lifetime and runs its transactions with
// BEGIN IMMEDIATE / COMMIT on it, with statements prepared once on it:
// no per-batch transaction objects or re-bound statements.
type writer struct {
	conn *sql.Conn
	path string

	getSummary, upsertSession, getToken *sql.Stmt
	// insertN[k] inserts k events in one statement (prepared on first use).
	insertN [maxInsertRows + 1]*sql.Stmt
	args    []any

	// cache holds the stored summary (and so the last seq) of sessions
	// recently written, so appends need not read it back. Entries are
	// loaded lazily and dropped whenever a write fails, or when the cache
	// outgrows cacheSize.
	cache     map[string]loop.Summary
	cacheSize int

	taken []*request

	// watchers are notified after each commit, once per session written.
	watchers *store.Watchers

	// file is the database file's identity when the writer began; the
	// writer checks, at most once a second, that the path still names it.
	file    os.FileInfo
	checked time.Time
	gone    bool
}

// fileGone says whether the database file was deleted or replaced since
// the writer began. Writes after that would go to a file nobody opens
// again (SQLite keeps the deleted one open) and be lost, so none is made.
func (w *writer) fileGone() error {
	if w.file == nil {
		return nil // an in-memory database
	}
	if now := time.Now(); !w.gone && now.Sub(w.checked) >= time.Second {
		w.checked = now
		fi, err := os.Stat(w.path)
		w.gone = err != nil || !os.SameFile(fi, w.file)
	}
	if w.gone {
		return fmt.Errorf("sqlite store %s: the database file was deleted or replaced while this process used it: nothing more is written, as it would be lost with the deleted file; stop this process, put the database back (from a backup) and resume the sessions", w.path)
	}
	return nil
}

// maxInsertRows is the most events one INSERT statement carries.
const maxInsertRows = 16

func newWriter(ctx context.Context, db *sql.DB, path string, cacheSize int) (*writer, error) {
	w := &writer{path: path, cache: map[string]loop.Summary{}, cacheSize: cacheSize, checked: time.Now()}
	w.file, _ = os.Stat(path) // nil for an in-memory database: nothing to check
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("sqlite store %s: writer connection: %w", path, err)
	}
	w.conn = conn
	prepare := func(q string) *sql.Stmt {
		if err != nil {
			return nil
		}
		var st *sql.Stmt
		st, err = conn.PrepareContext(ctx, q)
		return st
	}
	w.getSummary = prepare(`SELECT task, model, status, reason, iteration, tokens, cost_usd, created_at, updated_at, last_seq, tenant, workspace, labels, max_iterations FROM sessions WHERE id = ?`)
	// The WHERE makes the update conditional on the log ending where the
	// cache says it does; if another process appended meanwhile, nothing
	// changes and the append is refused.
	w.upsertSession = prepare(`INSERT INTO sessions (id, task, model, status, reason, iteration, tokens, cost_usd, created_at, updated_at, last_seq, tenant, workspace, labels, max_iterations)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (id) DO UPDATE SET task = excluded.task, model = excluded.model, status = excluded.status, reason = excluded.reason,
	iteration = excluded.iteration, tokens = excluded.tokens, cost_usd = excluded.cost_usd, created_at = excluded.created_at,
	updated_at = excluded.updated_at, last_seq = excluded.last_seq, tenant = excluded.tenant,
	workspace = excluded.workspace, labels = excluded.labels, max_iterations = excluded.max_iterations
WHERE sessions.last_seq = ?`)
	w.insertN[1] = prepare(insertSQL(1))
	w.getToken = prepare(`SELECT token FROM leases WHERE session_id = ?`)
	if err != nil {
		w.close()
		return nil, fmt.Errorf("sqlite store %s: prepare writer statements: %w", path, err)
	}
	return w, nil
}

func insertSQL(rows int) string {
	var b strings.Builder
	b.WriteString("INSERT INTO events (session_id, seq, type, version, time, data) VALUES ")
	for i := range rows {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("(?, ?, ?, ?, ?, ?)")
	}
	return b.String()
}

// insertStmt returns the statement inserting k events, preparing it once.
func (w *writer) insertStmt(ctx context.Context, k int) (*sql.Stmt, error) {
	if st := w.insertN[k]; st != nil {
		return st, nil
	}
	st, err := w.conn.PrepareContext(ctx, insertSQL(k))
	if err != nil {
		return nil, fmt.Errorf("sqlite store %s: prepare insert of %d events: %w", w.path, k, err)
	}
	w.insertN[k] = st
	return st, nil
}

func (w *writer) close() error {
	var errs []error
	stmts := append([]*sql.Stmt{w.getSummary, w.upsertSession, w.getToken}, w.insertN[:]...)
	for _, st := range stmts {
		if st != nil {
			errs = append(errs, st.Close())
		}
	}
	if w.conn != nil {
		errs = append(errs, w.conn.Close())
	}
	return errors.Join(errs...)
}

// write writes a batch in one transaction. A request that conflicts with
// the stored log fails alone; a failure of the transaction itself fails
// every request in it.
func (w *writer) write(batch []*request) {
	w.taken = w.taken[:0]
	for _, r := range batch {
		if r.Take() {
			w.taken = append(w.taken, r)
		}
	}
	if len(w.taken) == 0 {
		return
	}
	ctx := context.Background() // taken requests are written regardless of their contexts

	errs := make([]error, len(w.taken))
	fail := func(err error) {
		for _, r := range w.taken {
			for _, run := range r.Runs {
				delete(w.cache, run.SessionID)
			}
		}
		for i := range errs {
			if errs[i] == nil {
				errs[i] = err
			}
		}
	}
	// Another process holding the database past the busy timeout (many
	// processes on one file) is waited out with backoff: the batch is
	// written again from scratch, so appenders see it succeed, late.
	for attempt, wait := 0, 50*time.Millisecond; ; attempt, wait = attempt+1, min(wait*2, 2*time.Second) {
		err := w.writeAll(ctx, errs)
		if err == nil {
			break
		}
		if attempt < lockedRetries && isLocked(err) {
			for _, r := range w.taken {
				for _, run := range r.Runs {
					delete(w.cache, run.SessionID)
				}
			}
			clear(errs)
			time.Sleep(wait)
			continue
		}
		fail(err)
		break
	}
	// Watchers learn of the commit before the appenders do, on this
	// goroutine, so each session's notices go out in commit order.
	for i, r := range w.taken {
		if errs[i] != nil || !w.watchers.Any() {
			continue
		}
		for _, run := range r.Runs {
			w.watchers.Notify(store.Notice{SessionID: run.SessionID, Seq: run.Last, Events: slices.Clone(run.Events)})
		}
	}
	for i, r := range w.taken {
		r.Finish(errs[i])
	}
	clear(w.taken)
	w.trimCache()
}

// lockedRetries is how often a batch is tried again while the database is
// locked by another process (about 12 s of backoff on top of the busy
// timeout of each try).
const lockedRetries = 8

// isLocked reports a database another connection holds.
func isLocked(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "database is locked") || strings.Contains(msg, "database table is locked") || strings.Contains(msg, "SQLITE_BUSY")
}

// writeAll writes the taken requests in one transaction, setting errs[i]
// for a request that fails alone. An error return fails them all.
func (w *writer) writeAll(ctx context.Context, errs []error) error {
	if err := w.fileGone(); err != nil {
		return err
	}
	if _, err := w.conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		return fmt.Errorf("sqlite store %s: begin transaction: %w", w.path, err)
	}
	for i, r := range w.taken {
		var fatal error
		if errs[i], fatal = w.writeRequest(ctx, r); fatal != nil {
			w.rollback(ctx)
			return fatal
		}
	}
	if _, err := w.conn.ExecContext(ctx, "COMMIT"); err != nil {
		w.rollback(ctx)
		return fmt.Errorf("sqlite store %s: commit: %w", w.path, err)
	}
	return nil
}

// rollback ends a failed transaction. SQLite may already have rolled it
// back (disk full, I/O error), so "no transaction is active" is fine.
func (w *writer) rollback(ctx context.Context) {
	_, _ = w.conn.ExecContext(ctx, "ROLLBACK")
}

// writeRequest writes one request inside tx. It returns the request's own
// error (a sequence conflict), which leaves the rest of the batch alone, or
// a fatal error, which fails the whole batch: the transaction is no longer
// usable (SQLite rolled it back: disk full, I/O error) or the database is
// inconsistent.
//
// A request is checked against the cached end of each session's log before
// anything is written, and each session row is updated only if its log still
// ends there (another process may have appended): the row is updated before
// the events are inserted, so a request for one session that fails that
// check has written nothing. Only a request spanning several sessions needs
// a savepoint to undo the sessions already written.
func (w *writer) writeRequest(ctx context.Context, r *request) (reqErr, fatal error) {
	for _, run := range r.Runs {
		if !r.Fenced {
			break
		}
		var tok int64
		err := w.getToken.QueryRowContext(ctx, run.SessionID).Scan(&tok)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return nil, fmt.Errorf("sqlite store %s: session %s: read lease: %w", w.path, run.SessionID, err)
		}
		if tok != r.Token || errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("sqlite store %s: append to session %s with lease token %d (current %d): %w", w.path, run.SessionID, r.Token, tok, store.ErrLeaseLost), nil
		}
	}
	sums, stored, reqErr, fatal := r.Position(
		func(id string, fresh bool) (loop.Summary, error) { return w.summary(ctx, id, fresh) },
		func(run appendcheck.Run, data [][]byte, last int64) (bool, error) {
			return w.alreadyStored(ctx, run, data, last)
		})
	if reqErr != nil || fatal != nil {
		return reqErr, fatal
	}

	savepoint := len(r.Runs) > 1
	if savepoint {
		if _, err := w.conn.ExecContext(ctx, "SAVEPOINT append"); err != nil {
			return nil, fmt.Errorf("sqlite store %s: savepoint: %w", w.path, err)
		}
	}
	for i, run := range r.Runs {
		if stored[i] {
			continue
		}
		stale, err := w.insert(ctx, run, r.Data[i], &sums[i])
		if err == nil && !stale {
			continue
		}
		for _, run := range r.Runs {
			delete(w.cache, run.SessionID)
		}
		if savepoint {
			if _, rbErr := w.conn.ExecContext(ctx, "ROLLBACK TO append"); rbErr != nil {
				return nil, fmt.Errorf("sqlite store %s: roll back an append: %w (after: %v)", w.path, rbErr, err)
			}
			if _, rlErr := w.conn.ExecContext(ctx, "RELEASE append"); rlErr != nil {
				return nil, fmt.Errorf("sqlite store %s: release savepoint: %w", w.path, rlErr)
			}
		}
		if err != nil {
			return nil, err // fatal: inserts only fail when the database does
		}
		sum, err := w.summary(ctx, run.SessionID, true)
		if err != nil {
			return nil, err
		}
		return appendcheck.Conflict(run, sum.LastSeq), nil
	}
	if savepoint {
		if _, err := w.conn.ExecContext(ctx, "RELEASE append"); err != nil {
			return nil, fmt.Errorf("sqlite store %s: release savepoint: %w", w.path, err)
		}
	}
	for i, run := range r.Runs {
		if stored[i] {
			continue
		}
		if sums[i].Status.Finished() {
			delete(w.cache, run.SessionID) // unlikely to be appended to again
		} else {
			w.cache[run.SessionID] = sums[i]
		}
	}
	return nil, nil
}

// alreadyStored reports whether every event of run is stored already with
// the same type, version, time and payload (a retried append).
func (w *writer) alreadyStored(ctx context.Context, run appendcheck.Run, data [][]byte, last int64) (bool, error) {
	if run.First < 1 || run.Last > last {
		return false, nil
	}
	rows, err := w.conn.QueryContext(ctx, `SELECT seq, type, version, time, data FROM events WHERE session_id = ? AND seq BETWEEN ? AND ? ORDER BY seq`, run.SessionID, run.First, run.Last)
	if err != nil {
		return false, fmt.Errorf("sqlite store %s: session %s: read events: %w", w.path, run.SessionID, err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var (
			seq, at int64
			typ     string
			version int
			stored  []byte
		)
		if err := rows.Scan(&seq, &typ, &version, &at, &stored); err != nil {
			return false, fmt.Errorf("sqlite store %s: session %s: read events: %w", w.path, run.SessionID, err)
		}
		e := run.Events[n]
		if seq != e.Seq || typ != string(e.Type) || version != e.Version || at != encodeTime(e.Time) || !bytes.Equal(stored, data[n]) {
			return false, nil
		}
		n++
	}
	return n == len(run.Events), rows.Err()
}

// insert updates the session row of one run from sum (its stored summary,
// updated in place) and inserts its events. stale reports that the log no
// longer ends where sum says, in which case nothing was written.
func (w *writer) insert(ctx context.Context, run appendcheck.Run, data [][]byte, sum *loop.Summary) (stale bool, err error) {
	prev := sum.LastSeq
	for _, e := range run.Events {
		sum.Apply(e)
	}
	res, err := w.upsertSession.ExecContext(ctx, sum.ID, sum.Task, sum.Model, string(sum.Status), string(sum.Reason),
		sum.Iteration, sum.Tokens, sum.CostUSD, encodeTime(sum.CreatedAt), encodeTime(sum.UpdatedAt), sum.LastSeq, sum.Tenant, sum.Workspace, encodeLabels(sum.Labels), sum.MaxIterations, prev)
	if err != nil {
		return false, fmt.Errorf("sqlite store %s: session %s: update summary: %w", w.path, run.SessionID, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return false, fmt.Errorf("sqlite store %s: session %s: update summary: %w", w.path, run.SessionID, err)
	} else if n != 1 {
		return true, nil
	}
	for start := 0; start < len(run.Events); start += maxInsertRows {
		end := min(start+maxInsertRows, len(run.Events))
		st, err := w.insertStmt(ctx, end-start)
		if err != nil {
			return false, err
		}
		args := w.args[:0]
		for j := start; j < end; j++ {
			e := run.Events[j]
			args = append(args, e.SessionID, e.Seq, string(e.Type), e.Version, encodeTime(e.Time), data[j])
		}
		_, err = st.ExecContext(ctx, args...)
		clear(args)
		w.args = args[:0]
		if err != nil {
			return false, fmt.Errorf("sqlite store %s: session %s: insert events %d–%d: %w", w.path, run.SessionID, run.Events[start].Seq, run.Events[end-1].Seq, err)
		}
	}
	return false, nil
}

// summary returns the cached summary of a session, reading it from the
// database when it is not cached or when fresh is set.
func (w *writer) summary(ctx context.Context, id string, fresh bool) (loop.Summary, error) {
	if sum, ok := w.cache[id]; ok && !fresh {
		return sum, nil
	}
	var sum loop.Summary
	err := scanSummary(w.getSummary.QueryRowContext(ctx, id), &sum, false)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		sum = loop.Summary{}
	case err != nil:
		return loop.Summary{}, fmt.Errorf("sqlite store %s: session %s: read summary: %w", w.path, id, err)
	default:
		sum.ID = id
	}
	w.cache[id] = sum
	return sum, nil
}

// runOp runs a request's op in a transaction of its own and answers it.
func (w *writer) runOp(r *request) {
	if !r.Take() {
		return
	}
	ctx := context.Background() // a taken op runs regardless of its context
	for attempt, wait := 0, 50*time.Millisecond; ; attempt, wait = attempt+1, min(wait*2, 2*time.Second) {
		_, err := w.conn.ExecContext(ctx, "BEGIN IMMEDIATE")
		if err == nil {
			break
		}
		if attempt < lockedRetries && isLocked(err) {
			time.Sleep(wait) // another process holds the database: wait it out
			continue
		}
		r.Finish(fmt.Errorf("sqlite store %s: begin transaction: %w", w.path, err))
		return
	}
	if err := r.op(ctx, w); err != nil {
		w.rollback(ctx)
		r.Finish(err)
		return
	}
	if _, err := w.conn.ExecContext(ctx, "COMMIT"); err != nil {
		w.rollback(ctx)
		r.Finish(fmt.Errorf("sqlite store %s: commit: %w", w.path, err))
		return
	}
	r.Finish(nil)
}

// trimCache keeps the cache within its size by dropping arbitrary entries;
// they are reloaded on the next append to their session.
func (w *writer) trimCache() {
	if len(w.cache) <= w.cacheSize {
		return
	}
	drop := len(w.cache) - w.cacheSize*9/10
	for id := range w.cache {
		if drop == 0 {
			break
		}
		delete(w.cache, id)
		drop--
	}
}
