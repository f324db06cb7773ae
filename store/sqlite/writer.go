package sqlite

import (
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
	"github.com/agentloop/agentloop/store/internal/eventbatch"
)

// run is the writer goroutine. It writes appends as they come, into a
// transaction it keeps open for a moment (s.pace) while only appends
// nobody waits for (AppendAsync) arrive: a fast session's next appends
// then share its commit, and their statements are run while it waits
// rather than all at the end. An append someone waits for, an op, a full
// transaction (maxBatch events) or the end of the moment commits it.
func (s *Store) run() {
	defer close(s.done)
	var batch []*request
	for {
		var r *request
		ok := true
		if s.w.inTx {
			hold := s.pace.Hold(false)
			if hold == nil {
				s.commit()
				continue
			}
			select {
			case r, ok = <-s.reqs:
			case <-hold:
				s.commit()
				continue
			}
		} else {
			r, ok = <-s.reqs
		}
		if !ok {
			s.commit()
			return
		}
		// Take what is queued now, up to an op (which runs after the
		// transaction commits, keeping order) or a full transaction.
		var op *request
		urgent, closed, n := false, false, s.w.txEvents
		batch = batch[:0]
		for r != nil {
			if r.op != nil {
				op = r
				break
			}
			batch = append(batch, r)
			n += r.Size()
			urgent = urgent || r.Waited()
			if n >= s.opts.maxBatch {
				break
			}
			select {
			case r, ok = <-s.reqs:
				closed = !ok
			default:
				r = nil
			}
		}
		s.w.add(batch)
		clear(batch) // drop references for the GC
		if urgent || op != nil || closed || s.w.txEvents >= s.opts.maxBatch || s.pace.Hold(false) == nil {
			s.commit()
		}
		if op != nil {
			s.w.runOp(op)
			s.committed()
		}
		if closed {
			return
		}
	}
}

// commit commits the open transaction, if any.
func (s *Store) commit() {
	if s.w.inTx {
		s.w.commit()
		s.committed()
	}
}

// committed tells the pace and the checkpointer that a transaction ended.
func (s *Store) committed() {
	s.pace.Committed()
	s.ckpt.committed()
}

// writer owns the write connection and the cache of session summaries.
// It holds the connection for its lifetime and runs its transactions with
// BEGIN IMMEDIATE / COMMIT on it, with statements prepared once on it:
// no per-batch transaction objects or re-bound statements.
type writer struct {
	conn *sql.Conn
	path string

	getSummary, upsertSession, updateProgress, updateFenced, getToken, insertBatch *sql.Stmt
	// getLease and upsertLease read and write a lease row (grant): a
	// started session's first commit takes its lease with them.
	getLease, upsertLease *sql.Stmt
	// begin, commit and rollback are the transaction statements, prepared
	// once too: parsed anew for every transaction they cost the writer as
	// much CPU as an append's own statements.
	beginSt, commitSt, rollbackSt *sql.Stmt
	// batch is the buffer each run's events are framed in (see store/internal/eventbatch).
	batch []byte

	// cache holds the stored summary (and so the last seq) of sessions
	// recently written, so appends need not read it back. Entries are
	// loaded lazily and dropped whenever a write fails, or when the cache
	// outgrows cacheSize.
	cache     map[string]loop.Summary
	cacheSize int

	// The open transaction: whether one is open, the requests written in
	// it (answered at its commit), each one's own error, its event count.
	inTx     bool
	taken    []*request
	errs     []error
	txEvents int

	// watchers are notified after each commit, once per session written.
	watchers *store.Watchers
	// clock is the time leases are granted at.
	clock func() time.Time

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

func newWriter(ctx context.Context, db *sql.DB, path string, cacheSize int) (*writer, error) {
	w := &writer{path: path, cache: map[string]loop.Summary{}, cacheSize: cacheSize, checked: time.Now()}
	w.file, _ = os.Stat(path) // nil for an in-memory database: nothing to check
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("sqlite store %s: writer connection: %w", path, err)
	}
	w.conn = conn
	// The checkpointer copies the WAL back, on a connection of its own:
	// no commit of this one waits for a checkpoint (see checkpointer).
	if _, err := conn.ExecContext(ctx, "PRAGMA wal_autocheckpoint = 0"); err != nil {
		conn.Close()
		return nil, fmt.Errorf("sqlite store %s: writer connection: %w", path, err)
	}
	prepare := func(q string) *sql.Stmt {
		if err != nil {
			return nil
		}
		var st *sql.Stmt
		st, err = conn.PrepareContext(ctx, q)
		return st
	}
	w.getSummary = prepare(`SELECT task, model, status, reason, iteration, tokens, cost_usd, created_at, updated_at, last_seq, tenant, workspace, labels, max_iterations, forked_from, forked_at FROM sessions WHERE id = ?`)
	// The WHERE makes the update conditional on the log ending where the
	// cache says it does; if another process appended meanwhile, nothing
	// changes and the append is refused.
	w.upsertSession = prepare(`INSERT INTO sessions (id, task, model, status, reason, iteration, tokens, cost_usd, created_at, updated_at, last_seq, tenant, workspace, labels, max_iterations, forked_from, forked_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (id) DO UPDATE SET task = excluded.task, model = excluded.model, status = excluded.status, reason = excluded.reason,
	iteration = excluded.iteration, tokens = excluded.tokens, cost_usd = excluded.cost_usd, created_at = excluded.created_at,
	updated_at = excluded.updated_at, last_seq = excluded.last_seq, tenant = excluded.tenant,
	workspace = excluded.workspace, labels = excluded.labels, max_iterations = excluded.max_iterations,
	forked_from = excluded.forked_from, forked_at = excluded.forked_at
WHERE sessions.last_seq = ?`)
	// Only what events after session.started change: the columns the
	// sessions indexes hold (created_at, tenant, workspace, forked_from) are left
	// alone, so an append rewrites the row's page and none of theirs.
	w.updateProgress = prepare(`UPDATE sessions SET status = ?, reason = ?, iteration = ?, tokens = ?, cost_usd = ?, updated_at = ?, last_seq = ?
WHERE id = ? AND last_seq = ?`)
	// updateProgress fenced: the session's lease token must be the
	// appender's too.
	w.updateFenced = prepare(`UPDATE sessions SET status = ?, reason = ?, iteration = ?, tokens = ?, cost_usd = ?, updated_at = ?, last_seq = ?
WHERE id = ? AND last_seq = ? AND (SELECT token FROM leases WHERE session_id = ?) = ?`)
	w.insertBatch = prepare(`INSERT INTO event_batches (session_id, first_seq, last_seq, events) VALUES (?, ?, ?, ?)`)
	w.getToken = prepare(`SELECT token FROM leases WHERE session_id = ?`)
	w.getLease = prepare(`SELECT owner, token, expires_at FROM leases WHERE session_id = ?`)
	w.upsertLease = prepare(upsertLeaseSQL)
	w.beginSt = prepare(`BEGIN IMMEDIATE`)
	w.commitSt = prepare(`COMMIT`)
	w.rollbackSt = prepare(`ROLLBACK`)
	if err != nil {
		w.close()
		return nil, fmt.Errorf("sqlite store %s: prepare writer statements: %w", path, err)
	}
	return w, nil
}

func (w *writer) close() error {
	var errs []error
	for _, st := range []*sql.Stmt{w.getSummary, w.upsertSession, w.updateProgress, w.updateFenced, w.getToken, w.insertBatch, w.getLease, w.upsertLease, w.beginSt, w.commitSt, w.rollbackSt} {
		if st != nil {
			errs = append(errs, st.Close())
		}
	}
	if w.conn != nil {
		errs = append(errs, w.conn.Close())
	}
	return errors.Join(errs...)
}

// add writes a batch into the open transaction, beginning one if none is
// open. A request that conflicts with the stored log fails alone (at the
// commit); a failure of the transaction fails every request in it.
func (w *writer) add(batch []*request) {
	from := len(w.taken)
	for _, r := range batch {
		if r.Take() {
			w.taken = append(w.taken, r)
			w.errs = append(w.errs, nil)
		}
	}
	if len(w.taken) == from {
		return
	}
	ctx := context.Background() // taken requests are written regardless of their contexts
	if !w.inTx {
		if err := w.begin(ctx); err != nil {
			w.fail(err)
			return
		}
		w.inTx = true
	}
	for i := from; i < len(w.taken); i++ {
		var fatal error
		if w.errs[i], fatal = w.writeRequest(ctx, w.taken[i], true); fatal != nil {
			w.rollback(ctx)
			w.fail(fatal)
			return
		}
		w.txEvents += w.taken[i].Size()
	}
}

// begin begins the transaction appends are written in; none is begun on
// a database file deleted or replaced under this process (fileGone).
func (w *writer) begin(ctx context.Context) error {
	if err := w.fileGone(); err != nil {
		return err
	}
	return w.beginTx(ctx)
}

// beginTx begins a write transaction. Another process holding the
// database past the busy timeout (many processes on one file) is waited
// out with backoff, so writes succeed, late. An op (a lease, a control)
// begins here directly, as it always has: on a deleted database it still
// runs, and the appends that follow are refused (begin) with the error
// that tells people what happened and what to do.
func (w *writer) beginTx(ctx context.Context) error {
	if err := whileLocked(func() error { _, err := w.beginSt.ExecContext(ctx); return err }); err != nil {
		return fmt.Errorf("sqlite store %s: begin transaction: %w", w.path, err)
	}
	return nil
}

// whileLocked runs f, and again with backoff while it fails because the
// database is locked by another process (lockedRetries times: about 12 s
// beyond each try's own busy timeout).
func whileLocked(f func() error) error {
	for attempt, wait := 0, 50*time.Millisecond; ; attempt, wait = attempt+1, min(wait*2, 2*time.Second) {
		err := f()
		if err == nil || attempt >= lockedRetries || !isLocked(err) {
			return err
		}
		time.Sleep(wait)
	}
}

// commit commits the open transaction and answers its requests. Watchers
// learn of the commit before the appenders do, on this goroutine, so each
// session's notices go out in commit order.
func (w *writer) commit() {
	ctx := context.Background()
	if _, err := w.commitSt.ExecContext(ctx); err != nil {
		w.rollback(ctx)
		w.fail(fmt.Errorf("sqlite store %s: commit: %w", w.path, err))
		return
	}
	for i, r := range w.taken {
		if w.errs[i] != nil || !w.watchers.Any() {
			continue
		}
		for _, run := range r.Runs {
			w.watchers.Notify(store.Notice{SessionID: run.SessionID, Seq: run.Last, Events: slices.Clone(run.Events)})
		}
	}
	w.finish()
	w.trimCache()
}

// fail answers every request of the failed transaction (already rolled
// back) with err, unless it failed alone before, and forgets the cached
// summaries it touched.
func (w *writer) fail(err error) {
	for i, r := range w.taken {
		for _, run := range r.Runs {
			delete(w.cache, run.SessionID)
		}
		if w.errs[i] == nil {
			w.errs[i] = err
		}
	}
	w.finish()
}

// finish answers the transaction's requests and ends it.
func (w *writer) finish() {
	for i, r := range w.taken {
		r.Finish(w.errs[i])
	}
	clear(w.taken)
	clear(w.errs)
	w.taken, w.errs = w.taken[:0], w.errs[:0]
	w.inTx, w.txEvents = false, 0
}

// lockedRetries is how often a transaction is begun again while the
// database is locked by another process (about 12 s of backoff on top of
// the busy timeout of each try).
const lockedRetries = 8

// isLocked reports a database another connection holds.
func isLocked(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "database is locked") || strings.Contains(msg, "database table is locked") || strings.Contains(msg, "SQLITE_BUSY")
}

// rollback ends a failed transaction. SQLite may already have rolled it
// back (disk full, I/O error), so "no transaction is active" is fine.
func (w *writer) rollback(ctx context.Context) {
	_, _ = w.rollbackSt.ExecContext(ctx)
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
//
// A new session's first append (one session, from event 1, not cached) is
// written without reading the session first when guessNew is set: its
// row is inserted only if none exists, so a session that does exist
// writes nothing, and the request is then written again, reading it.
func (w *writer) writeRequest(ctx context.Context, r *request, guessNew bool) (reqErr, fatal error) {
	// A fenced append continuing a session whose summary is cached (the
	// common one) has its token checked by the summary's UPDATE
	// (updateFenced), one statement fewer; the token is read only to tell
	// why nothing was written. Any other fenced append reads it first.
	inUpdate := r.Fenced && w.fenceInUpdate(r)
	if r.Fenced && !inUpdate {
		if reqErr, fatal := w.checkToken(ctx, r); reqErr != nil || fatal != nil {
			return reqErr, fatal
		}
	}
	if a := r.Acquire; a != nil {
		if reqErr, fatal := w.grant(ctx, r.Runs[0].SessionID, a); reqErr != nil || fatal != nil {
			return reqErr, fatal
		}
	}
	guessed := false
	sums, stored, reqErr, fatal := r.Position(
		func(id string, fresh bool) (loop.Summary, error) {
			if _, cached := w.cache[id]; guessNew && !fresh && !cached && len(r.Runs) == 1 && r.Runs[0].First == 1 {
				guessed = true
				return loop.Summary{}, nil
			}
			return w.summary(ctx, id, fresh)
		},
		func(run appendcheck.Run, data [][]byte, last int64) (bool, error) {
			return w.alreadyStored(ctx, run, data, last)
		})
	if inUpdate && fatal == nil && (reqErr != nil || stored[0]) {
		// Refused, or a retry of events stored already: a lost lease is
		// the answer all the same.
		if lost, fatal := w.checkToken(ctx, r); lost != nil || fatal != nil {
			return lost, fatal
		}
	}
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
		stale, err := w.insert(ctx, run, r.Data[i], &sums[i], inUpdate, r.Token)
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
		if inUpdate {
			if lost, fatal := w.checkToken(ctx, r); lost != nil || fatal != nil {
				return lost, fatal
			}
		}
		if guessed {
			// The session exists: nothing was written (one run, no
			// savepoint); write the request as any other.
			return w.writeRequest(ctx, r, false)
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
	if a := r.Acquire; a != nil {
		// Written last: a request refused above has written nothing.
		id := r.Runs[0].SessionID
		if _, err := w.upsertLease.ExecContext(ctx, id, a.Owner, a.Token, a.Expires.UnixNano()); err != nil {
			return nil, fmt.Errorf("sqlite store %s: write lease of %s: %w", w.path, id, err)
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

// fenceInUpdate reports whether r's token can be checked by the UPDATE of
// its session's summary: one session, continuing a log whose summary is
// cached, without a session.started (which rewrites the whole row).
func (w *writer) fenceInUpdate(r *request) bool {
	if len(r.Runs) != 1 || r.Acquire != nil {
		return false
	}
	run := r.Runs[0]
	if sum, ok := w.cache[run.SessionID]; !ok || sum.LastSeq == 0 {
		return false
	}
	for _, e := range run.Events {
		if _, ok := e.Data.(*loop.SessionStarted); ok {
			return false
		}
	}
	return true
}

// checkToken reads the lease token of each session r appends to: a
// token not r's is r's own error (ErrLeaseLost).
func (w *writer) checkToken(ctx context.Context, r *request) (reqErr, fatal error) {
	for _, run := range r.Runs {
		var tok int64
		err := w.getToken.QueryRowContext(ctx, run.SessionID).Scan(&tok)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return nil, fmt.Errorf("sqlite store %s: session %s: read lease: %w", w.path, run.SessionID, err)
		}
		if tok != r.Token || errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("sqlite store %s: append to session %s with lease token %d (current %d): %w", w.path, run.SessionID, r.Token, tok, store.ErrLeaseLost), nil
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
	rows, err := w.conn.QueryContext(ctx, overlappingBatchesSQL, run.SessionID, run.First, run.Last)
	if err != nil {
		return false, fmt.Errorf("sqlite store %s: session %s: read events: %w", w.path, run.SessionID, err)
	}
	defer rows.Close()
	retried := eventbatch.Retried{Events: run.Events, Payloads: data, At: encodeTime}
	for rows.Next() {
		var (
			first, lastSeq int64
			b              []byte
		)
		if err := rows.Scan(&first, &lastSeq, &b); err != nil {
			return false, fmt.Errorf("sqlite store %s: session %s: read events: %w", w.path, run.SessionID, err)
		}
		if err := retried.Batch(first, lastSeq, b); err != nil {
			return false, fmt.Errorf("sqlite store %s: session %s: stored log is corrupt: %w", w.path, run.SessionID, err)
		}
	}
	return retried.Same(), rows.Err()
}

// overlappingBatchesSQL reads the batches holding a range of a session's
// events.
const overlappingBatchesSQL = `SELECT first_seq, last_seq, events FROM event_batches WHERE session_id = ? AND last_seq >= ? AND first_seq <= ? ORDER BY last_seq`

// insert updates the session row of one run from sum (its stored summary,
// updated in place) and inserts its events. stale reports that the log no
// longer ends where sum says, in which case nothing was written.
//
// fenced makes the summary's UPDATE also require token to be the
// session's lease token (stale when it is not); only for a run that does
// not start its session (fenceInUpdate).
func (w *writer) insert(ctx context.Context, run appendcheck.Run, data [][]byte, sum *loop.Summary, fenced bool, token int64) (stale bool, err error) {
	prev := sum.LastSeq
	starts := prev == 0
	for _, e := range run.Events {
		sum.Apply(e)
		if _, ok := e.Data.(*loop.SessionStarted); ok {
			starts = true
		}
	}
	var res sql.Result
	if starts {
		res, err = w.upsertSession.ExecContext(ctx, sum.ID, sum.Task, sum.Model, string(sum.Status), string(sum.Reason),
			sum.Iteration, sum.Tokens, sum.CostUSD, encodeTime(sum.CreatedAt), encodeTime(sum.UpdatedAt), sum.LastSeq, sum.Tenant, sum.Workspace, encodeLabels(sum.Labels), sum.MaxIterations,
			forkedFromID(sum.ForkedFrom), forkedFromAt(sum.ForkedFrom), prev)
	} else if fenced {
		res, err = w.updateFenced.ExecContext(ctx, string(sum.Status), string(sum.Reason),
			sum.Iteration, sum.Tokens, sum.CostUSD, encodeTime(sum.UpdatedAt), sum.LastSeq, sum.ID, prev, run.SessionID, token)
	} else {
		// Nothing that only session.started sets has changed.
		res, err = w.updateProgress.ExecContext(ctx, string(sum.Status), string(sum.Reason),
			sum.Iteration, sum.Tokens, sum.CostUSD, encodeTime(sum.UpdatedAt), sum.LastSeq, sum.ID, prev)
	}
	if err != nil {
		return false, fmt.Errorf("sqlite store %s: session %s: update summary: %w", w.path, run.SessionID, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return false, fmt.Errorf("sqlite store %s: session %s: update summary: %w", w.path, run.SessionID, err)
	} else if n != 1 {
		return true, nil
	}
	b := eventbatch.AppendRun(w.batch[:0], run.Events, data, encodeTime)
	w.batch = b
	if cap(b) > 1<<20 {
		w.batch = nil // do not keep a large append's buffer
	}
	if _, err := w.insertBatch.ExecContext(ctx, run.SessionID, run.First, run.Last, b); err != nil {
		return false, fmt.Errorf("sqlite store %s: session %s: insert events %d–%d: %w", w.path, run.SessionID, run.First, run.Last, err)
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
	if err := w.beginTx(ctx); err != nil {
		r.Finish(err)
		return
	}
	if err := r.op(ctx, w); err != nil {
		w.rollback(ctx)
		r.Finish(err)
		return
	}
	if _, err := w.commitSt.ExecContext(ctx); err != nil {
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
