package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/store"
	"github.com/agentloop/agentloop/store/internal/appendcheck"
	"github.com/agentloop/agentloop/store/internal/appendq"
	"github.com/agentloop/agentloop/store/internal/eventbatch"
)

// request is one Append waiting for the writer.
type request = appendq.Request

// Append writes events durably, all or nothing. An Append whose events are
// all stored already, identical, succeeds without writing: a retry after
// an unknown outcome is safe. Cancellation behaves as in store/sqlite: once
// the writer took the request, Append reports the commit's outcome.
func (s *Store) Append(ctx context.Context, events ...loop.Event) error {
	return s.appendSync(ctx, events, false, 0)
}

// AppendFenced is Append that succeeds only while token is the session's
// current lease token.
func (s *Store) AppendFenced(ctx context.Context, token int64, events ...loop.Event) error {
	return s.appendSync(ctx, events, true, token)
}

// AppendAsync queues events and returns at once; done is called exactly
// once when they are durable or failed.
func (s *Store) AppendAsync(ctx context.Context, events []loop.Event, done func(error)) {
	if r, err := s.enqueue(ctx, events, nil, done, false, 0); err != nil || r == nil {
		done(err)
	}
}

// AppendFencedAsync is AppendAsync with AppendFenced's check.
func (s *Store) AppendFencedAsync(ctx context.Context, token int64, events []loop.Event, done func(error)) {
	if r, err := s.enqueue(ctx, events, nil, done, true, token); err != nil || r == nil {
		done(err)
	}
}

// AppendAcquiring appends events of one session and takes its lease in
// the same transaction, both or neither; see store.LeaseStarter.
func (s *Store) AppendAcquiring(ctx context.Context, owner string, ttl time.Duration, events ...loop.Event) (store.Lease, error) {
	done := make(chan error, 1)
	r, err := appendq.New(ctx, events, false, 0, done, nil)
	if err != nil {
		return store.Lease{}, err
	}
	if r == nil || len(r.Runs) != 1 {
		return store.Lease{}, s.errf("append and acquire: want the events of one session")
	}
	r.Acquire = &appendq.Acquisition{Owner: owner, TTL: ttl}
	if err := s.send(ctx, r); err != nil {
		return store.Lease{}, err
	}
	if err := r.Wait(ctx, done); err != nil {
		return store.Lease{}, err
	}
	return store.Lease{SessionID: r.Runs[0].SessionID, Owner: owner, Token: r.Acquire.Token, Expires: r.Acquire.Expires}, nil
}

func (s *Store) appendSync(ctx context.Context, events []loop.Event, fenced bool, token int64) error {
	done := make(chan error, 1)
	r, err := s.enqueue(ctx, events, done, nil, fenced, token)
	if err != nil || r == nil {
		return err
	}
	return r.Wait(ctx, done)
}

func (s *Store) enqueue(ctx context.Context, events []loop.Event, done chan<- error, notify func(error), fenced bool, token int64) (*request, error) {
	r, err := appendq.New(ctx, events, fenced, token, done, notify)
	if err != nil || r == nil {
		return nil, err
	}
	return r, s.send(ctx, r)
}

// send hands a request to the writer.
func (s *Store) send(ctx context.Context, r *request) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return s.errf("append to session %s: %w", r.Runs[0].SessionID, store.ErrClosed)
	}
	select {
	case s.reqs <- r:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// run is the writer goroutine: it takes whatever appends are queued (up
// to maxBatch events), writes them in one transaction and answers each.
func (s *Store) run() {
	defer close(s.done)
	var batch []*request
	for {
		r, ok := <-s.reqs
		if !ok {
			return
		}
		batch = append(batch[:0], r)
		n := r.Size()
	drain:
		for n < s.opts.maxBatch {
			select {
			case r, ok := <-s.reqs:
				if !ok {
					break drain
				}
				batch = append(batch, r)
				n += r.Size()
			default:
				break drain
			}
		}
		s.w.write(batch)
		clear(batch)
	}
}

// writer owns one connection and a cache of the summaries it wrote last.
type writer struct {
	s     *Store
	conn  *pgxpool.Conn
	cache map[string]loop.Summary
	// cacheSize bounds cache; entries are reloaded when dropped.
	cacheSize int
	taken     []*request
	// appends is the one-trip pipeline being built (writeOneTrip).
	appends *appends
}

// write commits a batch. A request that conflicts with the stored log (or
// lost its lease) fails alone; a failure of the transaction fails them all.
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
	errs := make([]error, len(w.taken))
	wrote := make([][]bool, len(w.taken)) // wrote[i][k]: run k of request i was written now
	fail := func(idx []int, err error) {
		for _, i := range idx {
			for _, run := range w.taken[i].Runs {
				delete(w.cache, run.SessionID)
			}
			if errs[i] == nil {
				errs[i] = err
			}
		}
	}
	ctx := context.Background()
	idx := make([]int, len(w.taken))
	for i := range idx {
		idx[i] = i
	}
	if w.oneTrip() {
		stale, err := w.writeOneTrip(ctx, wrote)
		if err != nil {
			fail(idx, err)
			idx = nil
		} else {
			idx = stale // written again below, reading what they need
		}
	}
	if len(idx) > 0 {
		if err := w.writeAll(ctx, errs, wrote, idx); err != nil {
			fail(idx, err)
		}
	}
	if w.s.watchers.Any() {
		for i, r := range w.taken {
			if errs[i] != nil {
				continue
			}
			for k, run := range r.Runs {
				if wrote[i][k] {
					w.s.watchers.Notify(store.Notice{Tenant: w.cache[run.SessionID].Tenant, SessionID: run.SessionID, Seq: run.Last, Events: slices.Clone(run.Events)})
				}
			}
		}
	}
	for i, r := range w.taken {
		r.Finish(errs[i])
	}
	clear(w.taken)
	if len(w.cache) > w.cacheSize {
		clear(w.cache)
	}
}

// notice is the NOTIFY payload: which session's log now ends where.
type notice struct {
	Origin string `json:"o"`
	Tenant string `json:"t"`
	ID     string `json:"s"`
	Seq    int64  `json:"q"`
}

// channel is the NOTIFY channel of commits.
const channel = "agentloop_events"

// connection returns the writer's connection, taking a new one from the
// pool when the last was lost (the server restarted, the network dropped):
// appends fail while the database is away and go through once it is back.
func (w *writer) connection(ctx context.Context) (*pgxpool.Conn, error) {
	if w.conn != nil && !w.conn.Conn().IsClosed() {
		return w.conn, nil
	}
	if w.conn != nil {
		w.conn.Release()
		w.conn = nil
	}
	actx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	conn, err := w.s.writerConn(actx)
	if err != nil {
		return nil, fmt.Errorf("the database connection was lost and none can be had now: %w", err)
	}
	w.conn = conn
	return conn, nil
}

// writerConn takes a connection for the writer from the pool.
//
// Every statement the writer runs finds its rows by key. Planned while a
// new database's tables are nearly empty, or before they were first
// analyzed, such statements scan the whole table instead, and a
// connection keeps its plans for its life: a fresh server's appends
// slowed as its sessions table grew (for 1,000 sessions, 11,226
// sequential scans reading 11 million rows, in about one run in two,
// where 12,364 index scans did otherwise). Scans of whole tables are
// priced out on the writer's connection.
func (s *Store) writerConn(ctx context.Context) (*pgxpool.Conn, error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	// The connection may have served the pool before: plans it already
	// keeps are made again, under the setting.
	for _, q := range []string{"SET enable_seqscan = off", "DISCARD PLANS"} {
		if _, err := conn.Exec(ctx, q); err != nil {
			conn.Release()
			return nil, err
		}
	}
	return conn, nil
}

// oneTrip reports whether every request of the batch can be written in one
// round trip (writeOneTrip): one session each, continuing its log where the
// writer last left it, or beginning a session.
func (w *writer) oneTrip() bool {
	planned := map[string]int64{}
	for _, r := range w.taken {
		if len(r.Runs) != 1 {
			return false
		}
		run := r.Runs[0]
		last, ok := planned[run.SessionID]
		if !ok {
			last = w.cache[run.SessionID].LastSeq // 0 for a session not cached
		}
		if run.First != last+1 || (r.Acquire != nil && last != 0) {
			return false // a lease is taken in one trip only with a new session's start
		}
		planned[run.SessionID] = run.Last
	}
	return true
}

// writeOneTrip writes the batch in one round trip: the appends' statements
// (appends: progress shared, a new session's start taking its lease
// too), all sent as one pipeline, which
// PostgreSQL runs as one implicit transaction — committed whole, or not
// at all, when the pipeline ends. A session not cached is taken to be
// new. An append that wrote
// nothing — the log moved on elsewhere, the lease changed hands, the
// session exists already — is returned in stale, untouched, to be written
// again by writeAll, which reads what it needs.
func (w *writer) writeOneTrip(ctx context.Context, wrote [][]bool) (stale []int, err error) {
	conn, err := w.connection(ctx)
	if err != nil {
		return nil, err
	}
	planned := map[string]loop.Summary{}
	sums := make([]loop.Summary, len(w.taken))
	if w.appends == nil {
		w.appends = newAppends()
	}
	a := w.appends
	defer a.reset() // nothing of the batch is kept for the GC
	for i, r := range w.taken {
		run := r.Runs[0]
		sum, ok := planned[run.SessionID]
		if !ok {
			sum = w.cache[run.SessionID]
		}
		next := w.queueAppend(a, r, run, r.Data[0], sum, r.Acquire != nil)
		planned[run.SessionID], sums[i] = next, next
	}
	written, tokens, err := a.send(ctx, conn, "commit")
	if err != nil {
		return nil, w.s.errf("%w", err)
	}
	for i, ok := range written {
		wrote[i] = []bool{ok}
		if acq := w.taken[i].Acquire; acq != nil {
			acq.Token = tokens[i]
		}
		if id := w.taken[i].Runs[0].SessionID; ok {
			w.cache[id] = sums[i]
		} else {
			delete(w.cache, id)
			stale = append(stale, i)
		}
	}
	return stale, nil
}

// writeAll writes the requests idx of the batch in a transaction of its
// own, in as few round trips as their kinds allow.
func (w *writer) writeAll(ctx context.Context, errs []error, wrote [][]bool, idx []int) error {
	conn, err := w.connection(ctx)
	if err != nil {
		return err
	}
	tx, err := conn.Begin(ctx)
	if err != nil {
		return w.s.errf("begin: %w", err)
	}
	defer tx.Rollback(ctx)
	p := pipeline{w: w, tx: tx, errs: errs, wrote: wrote, planned: map[string]loop.Summary{}}
	for _, i := range idx {
		r := w.taken[i]
		wrote[i] = make([]bool, len(r.Runs))
		if err := p.add(ctx, i, r); err != nil {
			return err
		}
	}
	if err := p.flush(ctx); err != nil {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return w.s.errf("commit: %w", err)
	}
	return nil
}

// pipeline sends the common appends of a batch — one session, continuing
// the log where the writer last left it — in one round trip (appends:
// those of different sessions share statements). Anything else (a session not cached, a retry, a request
// spanning sessions) flushes the pipeline and is written on its own.
type pipeline struct {
	w     *writer
	tx    pgx.Tx
	errs  []error
	wrote [][]bool
	// planned is each session's summary once the queued statements ran.
	planned map[string]loop.Summary
	// appends holds the queued statements; the k-th append added is
	// queued[k].
	appends *appends
	queued  []queuedAppend
}

type queuedAppend struct {
	i   int // the request
	sum loop.Summary
}

func (p *pipeline) add(ctx context.Context, i int, r *request) error {
	if len(r.Runs) == 1 && r.Acquire == nil {
		run := r.Runs[0]
		sum, ok := p.planned[run.SessionID]
		if !ok {
			sum, ok = p.w.cache[run.SessionID]
		}
		if ok && run.First == sum.LastSeq+1 {
			if p.appends == nil {
				p.appends = newAppends()
			}
			sum = p.w.queueAppend(p.appends, r, run, r.Data[0], sum, false)
			p.queued = append(p.queued, queuedAppend{i: i, sum: sum})
			p.planned[run.SessionID] = sum
			return nil
		}
	}
	if err := p.flush(ctx); err != nil {
		return err
	}
	var fatal error
	p.errs[i], fatal = p.w.writeRequest(ctx, p.tx, r, p.wrote[i])
	return fatal
}

// flush sends the queued statements and reads their outcomes. An append
// that inserted nothing found the log moved on (or the lease taken): its
// request fails alone, and so do later ones of the same session.
func (p *pipeline) flush(ctx context.Context) error {
	if len(p.queued) == 0 {
		return nil
	}
	written, _, err := p.appends.send(ctx, p.tx, "append")
	if err != nil {
		return p.w.s.errf("%w", err)
	}
	for k, q := range p.queued {
		if written[k] {
			p.wrote[q.i][0] = true
			p.w.cache[p.w.taken[q.i].Runs[0].SessionID] = q.sum
		} else {
			p.errs[q.i] = errStale // told apart below
		}
	}
	for _, q := range p.queued {
		if p.errs[q.i] != errStale {
			continue
		}
		r := p.w.taken[q.i]
		run := r.Runs[0]
		delete(p.w.cache, run.SessionID)
		p.errs[q.i] = nil
		if r.Fenced {
			var tok int64
			err := p.tx.QueryRow(ctx, `SELECT token FROM leases WHERE session_id = $1`, run.SessionID).Scan(&tok)
			if err != nil && !errors.Is(err, pgx.ErrNoRows) {
				return p.w.s.errf("session %s: read lease: %w", run.SessionID, err)
			}
			if tok != r.Token || errors.Is(err, pgx.ErrNoRows) {
				p.errs[q.i] = p.w.s.errf("append to session %s with lease token %d (current %d): %w", run.SessionID, r.Token, tok, store.ErrLeaseLost)
				continue
			}
		}
		sum, err := p.w.summary(ctx, p.tx, run.SessionID, true)
		if err != nil {
			return err
		}
		p.errs[q.i] = appendcheck.Conflict(run, sum.LastSeq)
	}
	p.appends.reset()
	p.queued = p.queued[:0]
	clear(p.planned)
	return nil
}

// errStale marks a queued append that wrote nothing, until flush says why.
var errStale = errors.New("stale")

// queueAppend adds an append to a: one that continues a stored session's
// log as a row of a shared statement, any other as appendStatement makes
// it. It returns the session's summary once the append is written.
func (w *writer) queueAppend(a *appends, r *request, run appendcheck.Run, data [][]byte, before loop.Summary, takeLease bool) loop.Summary {
	if isProgress(run, before.LastSeq, takeLease) {
		sum, batch, told := w.framed(run, data, before)
		a.progress(r, run, sum, before.LastSeq, batch, told)
		return sum
	}
	q, args, next := w.appendStatement(r, run, data, before, takeLease)
	a.single(run.SessionID, q, args, takeLease)
	return next
}

// framed returns what an append makes of its session's summary (before:
// as stored), its events framed as a batch, and the notice of it.
func (w *writer) framed(run appendcheck.Run, data [][]byte, before loop.Summary) (sum loop.Summary, batch, told []byte) {
	sum = before
	for _, e := range run.Events {
		sum.Apply(e)
	}
	sum.ID = run.SessionID
	batch = eventbatch.AppendRun(nil, run.Events, data, frameTime)
	told, _ = json.Marshal(notice{Origin: w.s.origin, Tenant: sum.Tenant, ID: run.SessionID, Seq: run.Last})
	return sum, batch, told
}

// appendStatement is one statement that updates (or creates) a session's
// summary row if its log still ends at prev — and, for a fenced append, if
// the lease token is still the caller's, locking the lease row so no
// other server can take it before this commits — and inserts the events
// only then. With takeLease, a new session's start takes the session's
// lease first (r.Acquire), as grant would, writes only if it got it, and
// returns the lease's token (NULL: not taken) beside the count. It returns how many events it inserted, len(run.Events) or
// none, and when it inserted them it notifies channel (delivered on
// commit, in commit order, to every server listening; dropped with the
// transaction or savepoint it was made in).
//
// before is the session's summary as stored (LastSeq 0: no session yet);
// after is what the statement makes it.
func (w *writer) appendStatement(r *request, run appendcheck.Run, data [][]byte, before loop.Summary, takeLease bool) (q string, args []any, after loop.Summary) {
	prev := before.LastSeq
	sum, batch, told := w.framed(run, data, before)
	if isProgress(run, prev, takeLease) {
		q, args = progressStatement(r, run, sum, prev, batch, told)
		return q, args, sum
	}
	labels := []byte("{}")
	if len(sum.Labels) > 0 {
		labels, _ = json.Marshal(sum.Labels)
	}
	forkedFromID, forkedAt := "", 0
	if f := sum.ForkedFrom; f != nil {
		forkedFromID, forkedAt = f.ID, f.Iteration
	}
	args = []any{run.SessionID, sum.Tenant, sum.Task, sum.Model, string(sum.Status), string(sum.Reason), sum.Iteration, sum.MaxIterations,
		sum.Tokens, sum.CostUSD, encodeTime(sum.CreatedAt), encodeTime(sum.UpdatedAt), sum.LastSeq, sum.Workspace, string(labels),
		prev, r.Token, run.First, run.Last, batch, len(run.Events), string(told), forkedFromID, forkedAt}
	fence, guard, token := "", "", ""
	switch {
	case takeLease && prev == 0:
		// The lease as grant takes it, in the same statement: taken only
		// for a session not stored yet (one that is goes the long way,
		// writeAcquiring, under a savepoint), and the session and its
		// events written only when it was taken. A lease held by another
		// owner, or a session that exists, writes nothing here. (Another
		// writer that takes no lease storing the same new session at the
		// same moment leaves the lease taken until it expires.)
		a := r.Acquire
		now := w.s.leaseTimes(a)
		args = append(args, a.Owner, now, a.Expires)
		fence = `lease AS (` + takeLeaseSQL(`SELECT $1, $25, 1, $27 WHERE NOT EXISTS (SELECT 1 FROM sessions WHERE id = $1)`, "$26") + `), `
		guard = ` AND $17::bigint IS NOT NULL AND EXISTS (SELECT 1 FROM lease)`
		token = `, (SELECT token FROM lease)`
	case r.Fenced:
		fence = `fence AS (SELECT 1 FROM leases WHERE session_id = $1 AND token = $17 FOR SHARE), `
		guard = ` AND EXISTS (SELECT 1 FROM fence)`
	default:
		guard = ` AND $17::bigint IS NOT NULL`
	}
	var up string
	if prev == 0 {
		up = `INSERT INTO sessions (id, ` + summaryCols + `)
	SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15::jsonb, $23, $24 WHERE $16::bigint = 0` + guard + `
	ON CONFLICT (id) DO NOTHING RETURNING id`
	} else {
		up = `UPDATE sessions SET tenant = $2, task = $3, model = $4, status = $5, reason = $6, iteration = $7, max_iterations = $8,
	tokens = $9, cost_usd = $10, created_at = $11, updated_at = $12, last_seq = $13, workspace = $14, labels = $15::jsonb,
	forked_from = $23, forked_at = $24
	WHERE id = $1 AND last_seq = $16` + guard + ` RETURNING id`
	}
	return withBatch(fence, up, 18, token), args, sum
}

// withBatch completes an append statement: the summary's statement up
// (which returns the session's id when it wrote its row, after the CTEs
// fence, each ending in a comma), then the batch's row, inserted only if
// up wrote, and the notice of it. The batch's first seq, last seq,
// frames, event count and notice are the five placeholders from $from
// on. The statement returns the count of events inserted, then extra.
func withBatch(fence, up string, from int, extra string) string {
	p := func(i int) string { return "$" + strconv.Itoa(from+i) }
	return `WITH ` + fence + `up AS (` + up + `),
ins AS (INSERT INTO event_batches (session_id, first_seq, last_seq, events)
	SELECT $1, ` + p(0) + `, ` + p(1) + `, ` + p(2) + ` FROM up
	RETURNING 1),
n AS (SELECT count(*) * ` + p(3) + `::integer AS c FROM ins),
told AS (SELECT pg_notify('` + channel + `', ` + p(4) + `) FROM n WHERE c > 0)
SELECT c` + extra + ` FROM n, (SELECT count(*) FROM told) AS t`
}

// isProgress says whether an append only continues a stored session's log
// (it ends at prev): it moves the summary's progress columns, takes no
// lease, and holds no session.started.
func isProgress(run appendcheck.Run, prev int64, takeLease bool) bool {
	return prev != 0 && !takeLease && !startsSession(run)
}

// startsSession reports whether a run holds a session.started, the one
// event that sets more of the summary than its progress.
func startsSession(run appendcheck.Run) bool {
	for _, e := range run.Events {
		if _, ok := e.Data.(*loop.SessionStarted); ok {
			return true
		}
	}
	return false
}

// progressStatement is appendStatement for a run that continues a stored
// session without starting it: only what events after session.started
// change is set (loop.Summary.Apply), as the SQLite store does — fewer
// values to send and bind, and no labels to parse as jsonb again.
func progressStatement(r *request, run appendcheck.Run, sum loop.Summary, prev int64, batch, told []byte) (q string, args []any) {
	args = []any{run.SessionID, string(sum.Status), string(sum.Reason), sum.Iteration, sum.Tokens, sum.CostUSD, encodeTime(sum.UpdatedAt), sum.LastSeq,
		prev, r.Token, run.First, run.Last, batch, len(run.Events), string(told)}
	fence, guard := "", ` AND $10::bigint IS NOT NULL`
	if r.Fenced {
		fence = `fence AS (SELECT 1 FROM leases WHERE session_id = $1 AND token = $10 FOR SHARE), `
		guard = ` AND EXISTS (SELECT 1 FROM fence)`
	}
	up := `UPDATE sessions SET status = $2, reason = $3, iteration = $4, tokens = $5, cost_usd = $6, updated_at = $7, last_seq = $8
	WHERE id = $1 AND last_seq = $9` + guard + ` RETURNING id`
	return withBatch(fence, up, 11, ""), args
}

// writeAcquiring writes a request that takes its session's lease with it
// (AppendAcquiring): the lease as Acquire takes it, then the append, under
// a savepoint, so that a refusal of either leaves nothing of both. The
// savepoint is rolled back to on a refusal and otherwise left for the
// commit to release. A new session's append is written as new at once
// (its session row inserted only if none exists), as writeOneTrip does:
// the savepoint and the lease take one round trip, the append one more.
func (w *writer) writeAcquiring(ctx context.Context, tx pgx.Tx, r *request, wrote []bool) (reqErr, fatal error) {
	id, a := r.Runs[0].SessionID, r.Acquire
	reqErr, fatal = w.s.grant(ctx, tx, id, a, true)
	if reqErr == nil && fatal == nil {
		// The lease row stays locked until the commit: no token check
		// is needed.
		run := r.Runs[0]
		if _, cached := w.cache[id]; !cached && run.First == 1 {
			q, args, next := w.appendStatement(r, run, r.Data[0], loop.Summary{}, false)
			var n int64
			if err := tx.QueryRow(ctx, q, args...).Scan(&n); err != nil {
				return nil, w.s.errf("session %s: append events %d–%d: %w", id, run.First, run.Last, err)
			}
			if n == int64(len(run.Events)) {
				wrote[0] = true
				w.cache[id] = next
				return nil, nil
			}
		}
		reqErr, fatal = w.writeAppend(ctx, tx, r, wrote)
	}
	if fatal != nil || reqErr == nil {
		return nil, fatal
	}
	if _, err := tx.Exec(ctx, "ROLLBACK TO SAVEPOINT acquire"); err != nil {
		return nil, w.s.errf("roll back a refused lease: %w", err)
	}
	return reqErr, nil
}

// writeRequest writes one request inside tx: its own error (conflict, lost
// lease) leaves the batch alone; a fatal error fails the batch.
func (w *writer) writeRequest(ctx context.Context, tx pgx.Tx, r *request, wrote []bool) (reqErr, fatal error) {
	if r.Acquire != nil {
		return w.writeAcquiring(ctx, tx, r, wrote)
	}
	return w.writeAppend(ctx, tx, r, wrote)
}

// writeAppend is writeRequest for an append that takes no lease.
func (w *writer) writeAppend(ctx context.Context, tx pgx.Tx, r *request, wrote []bool) (reqErr, fatal error) {
	if r.Fenced {
		for _, run := range r.Runs {
			// FOR SHARE: an Acquire elsewhere waits for this commit, so the
			// token cannot change between this check and the write.
			var tok int64
			err := tx.QueryRow(ctx, `SELECT token FROM leases WHERE session_id = $1 FOR SHARE`, run.SessionID).Scan(&tok)
			if err != nil && !errors.Is(err, pgx.ErrNoRows) {
				return nil, w.s.errf("session %s: read lease: %w", run.SessionID, err)
			}
			if tok != r.Token || errors.Is(err, pgx.ErrNoRows) {
				return w.s.errf("append to session %s with lease token %d (current %d): %w", run.SessionID, r.Token, tok, store.ErrLeaseLost), nil
			}
		}
	}
	sums, stored, reqErr, fatal := r.Position(
		func(id string, fresh bool) (loop.Summary, error) { return w.summary(ctx, tx, id, fresh) },
		func(run appendcheck.Run, data [][]byte, last int64) (bool, error) {
			return w.alreadyStored(ctx, tx, run, data, last)
		})
	if reqErr != nil || fatal != nil {
		return reqErr, fatal
	}
	savepoint := len(r.Runs) > 1
	if savepoint {
		if _, err := tx.Exec(ctx, "SAVEPOINT append"); err != nil {
			return nil, w.s.errf("savepoint: %w", err)
		}
	}
	for k, run := range r.Runs {
		if stored[k] {
			continue
		}
		ok, err := w.insert(ctx, tx, r, run, r.Data[k], &sums[k])
		if err == nil && ok {
			wrote[k] = true
			continue
		}
		for _, run := range r.Runs {
			delete(w.cache, run.SessionID)
		}
		clear(wrote)
		if err != nil {
			return nil, err
		}
		if savepoint {
			if _, err := tx.Exec(ctx, "ROLLBACK TO SAVEPOINT append"); err != nil {
				return nil, w.s.errf("roll back an append: %w", err)
			}
		}
		sum, err := w.summary(ctx, tx, run.SessionID, true)
		if err != nil {
			return nil, err
		}
		return appendcheck.Conflict(run, sum.LastSeq), nil
	}
	if savepoint {
		if _, err := tx.Exec(ctx, "RELEASE SAVEPOINT append"); err != nil {
			return nil, w.s.errf("release savepoint: %w", err)
		}
	}
	for k, run := range r.Runs {
		if !stored[k] {
			w.cache[run.SessionID] = sums[k]
		}
	}
	return nil, nil
}

// alreadyStored reports whether every event of run is stored already with
// the same type, version, time and payload (a retried append).
func (w *writer) alreadyStored(ctx context.Context, tx pgx.Tx, run appendcheck.Run, data [][]byte, last int64) (bool, error) {
	if run.First < 1 || run.Last > last {
		return false, nil
	}
	rows, err := tx.Query(ctx, `SELECT first_seq, last_seq, events FROM event_batches WHERE session_id = $1 AND last_seq >= $2 AND first_seq <= $3 ORDER BY last_seq`, run.SessionID, run.First, run.Last)
	if err != nil {
		return false, w.s.errf("session %s: read events: %w", run.SessionID, err)
	}
	defer rows.Close()
	retried := eventbatch.Retried{Events: run.Events, Payloads: data, At: frameTime}
	for rows.Next() {
		var (
			first, lastSeq int64
			b              []byte
		)
		if err := rows.Scan(&first, &lastSeq, &b); err != nil {
			return false, w.s.errf("session %s: read events: %w", run.SessionID, err)
		}
		if err := retried.Batch(first, lastSeq, b); err != nil {
			return false, w.s.errf("session %s: stored log is corrupt: %w", run.SessionID, err)
		}
	}
	return retried.Same(), rows.Err()
}

// insert writes one run with appendStatement, on its own, updating sum.
// ok is false when the log moved on or the lease changed hands (and
// nothing was written).
func (w *writer) insert(ctx context.Context, tx pgx.Tx, r *request, run appendcheck.Run, data [][]byte, sum *loop.Summary) (ok bool, err error) {
	q, args, next := w.appendStatement(r, run, data, *sum, false)
	var n int64
	if err := tx.QueryRow(ctx, q, args...).Scan(&n); err != nil {
		return false, w.s.errf("session %s: append events %d–%d: %w", run.SessionID, run.First, run.Last, err)
	}
	if n != int64(len(run.Events)) {
		return false, nil
	}
	*sum = next
	return true, nil
}

// summary returns the cached summary of a session, reading it when it is
// not cached or when fresh is set.
func (w *writer) summary(ctx context.Context, tx pgx.Tx, id string, fresh bool) (loop.Summary, error) {
	if sum, ok := w.cache[id]; ok && !fresh {
		return sum, nil
	}
	var sum loop.Summary
	err := scanSummary(tx.QueryRow(ctx, `SELECT `+summaryCols+` FROM sessions WHERE id = $1`, id), &sum, false)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		sum = loop.Summary{}
	case err != nil:
		return loop.Summary{}, fmt.Errorf("postgres store %s: session %s: read summary: %w", w.s.name, id, err)
	default:
		sum.ID = id
	}
	w.cache[id] = sum
	return sum, nil
}
