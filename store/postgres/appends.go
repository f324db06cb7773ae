package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/store/internal/appendcheck"
)

// appends is one pipeline of append statements being built. Appends that
// continue a stored session's log (progress) share statements of many
// rows, one row per session (progressRowsSQL; a statement left with one
// row is progressStatement's): PostgreSQL plans, locks
// and runs one statement for them all, which costs it about two thirds of
// what a statement each did. Every other append is a statement of its own
// (appendStatement). Each session's appends run in the order they were
// added: an append joins the newest shared statement only when that
// statement comes after everything queued for its session; otherwise it
// starts a new one. Appends of different sessions may run in any order.
type appends struct {
	items []appendItem
	// last is, for each session, the index in items of the last statement
	// holding one of its appends.
	last map[string]int
	// group is the index in items of the newest shared statement, -1
	// when there is none.
	group int
	// ids holds each append's session, in the order added: append k is
	// the k-th added.
	ids []string
}

// appendItem is one statement of the pipeline: a single append's (q,
// args; acquire when it returns the lease token too), or rows.
type appendItem struct {
	k       int // the single append's number (see appends.ids)
	q       string
	args    []any
	acquire bool
	rows    *progressRows
}

func newAppends() *appends { return &appends{last: map[string]int{}, group: -1} }

// reset empties a for the next pipeline, keeping its memory (the writer
// builds one pipeline per batch).
func (a *appends) reset() {
	clear(a.items)
	a.items, a.group, a.ids = a.items[:0], -1, a.ids[:0]
	clear(a.last)
}

// single adds an append written by a statement of its own.
func (a *appends) single(id, q string, args []any, acquire bool) {
	a.last[id] = len(a.items)
	a.items = append(a.items, appendItem{k: len(a.ids), q: q, args: args, acquire: acquire})
	a.ids = append(a.ids, id)
}

// progress adds an append that continues session id's stored log from
// prev, as progressStatement would write it.
func (a *appends) progress(r *request, run appendcheck.Run, sum loop.Summary, prev int64, batch, told []byte) {
	last, queued := a.last[run.SessionID]
	if a.group < 0 || (queued && last >= a.group) {
		a.group = len(a.items)
		a.items = append(a.items, appendItem{rows: &progressRows{}})
	}
	a.items[a.group].rows.add(len(a.ids), r, run, sum, prev, batch, told)
	a.last[run.SessionID] = a.group
	a.ids = append(a.ids, run.SessionID)
}

// batchSender is what a pipeline goes on: a connection, where it is an
// implicit transaction of its own, or a transaction.
type batchSender interface {
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// send sends the pipeline on to and reads its outcomes: wrote[k] says
// append k inserted its events, and token[k], for an append that took its
// lease, the lease's token (0: not taken). Once an append of a session
// wrote nothing (its log moved on, or the lease was taken), every later
// append of that session counts as not written either, whatever its
// statement reported. end names what ending the pipeline does on to
// ("commit" on a connection), for its error.
func (a *appends) send(ctx context.Context, to batchSender, end string) (wrote []bool, token []int64, err error) {
	var b pgx.Batch
	for _, it := range a.items {
		if it.rows != nil {
			q, args := it.rows.statement()
			b.Queue(q, args...)
		} else {
			b.Queue(it.q, it.args...)
		}
	}
	br := to.SendBatch(ctx, &b)
	wrote, token, err = a.read(br)
	if err != nil {
		br.Close()
		return nil, nil, fmt.Errorf("append: %w", err)
	}
	if err := br.Close(); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", end, err)
	}
	moved := map[string]bool{}
	for k, id := range a.ids {
		if moved[id] {
			wrote[k] = false
		} else if !wrote[k] {
			moved[id] = true
		}
	}
	return wrote, token, nil
}

// read reads the outcomes of the statements send queued, as send reports
// them before telling later appends of a moved session.
func (a *appends) read(br pgx.BatchResults) (wrote []bool, token []int64, err error) {
	wrote, token = make([]bool, len(a.ids)), make([]int64, len(a.ids))
	for _, it := range a.items {
		if it.rows != nil && len(it.rows.rows) == 1 {
			it = appendItem{k: it.rows.k[0]} // written by progressStatement
		}
		if it.rows != nil {
			var (
				written        []int64
				inserted, told int64
			)
			if err := br.QueryRow().Scan(&written, &inserted, &told); err != nil {
				return nil, nil, err
			}
			if inserted != int64(len(written)) || told != inserted {
				return nil, nil, fmt.Errorf("a shared append statement wrote %d sessions' rows but inserted %d batches and sent %d notices: a bug in agentloop, please report it; whether these appends were committed is not known, and appending them again is safe", len(written), inserted, told)
			}
			for _, row := range written {
				wrote[it.rows.k[row-1]] = true // ordinals count from 1
			}
			continue
		}
		var (
			n   int64
			tok *int64
		)
		dest := []any{&n}
		if it.acquire {
			dest = append(dest, &tok)
		}
		if err := br.QueryRow().Scan(dest...); err != nil {
			return nil, nil, err
		}
		wrote[it.k] = n > 0
		if tok != nil {
			token[it.k] = *tok
		}
	}
	return wrote, token, nil
}

// progressRows is the progress appends one shared statement writes, at
// most one per session. One alone is written by progressStatement, which
// costs less for a single row (a session waiting for its commit alone).
type progressRows struct {
	k    []int // the appends' numbers
	rows []progressRow
}

type progressRow struct {
	r           *request
	run         appendcheck.Run
	sum         loop.Summary
	prev        int64
	batch, told []byte
}

func (p *progressRows) add(k int, r *request, run appendcheck.Run, sum loop.Summary, prev int64, batch, told []byte) {
	p.k = append(p.k, k)
	p.rows = append(p.rows, progressRow{r: r, run: run, sum: sum, prev: prev, batch: batch, told: told})
}

// statement returns the statement that writes the rows: progressRowsSQL
// and a column of values each, or, for one row, progressStatement's.
func (p *progressRows) statement() (q string, args []any) {
	if len(p.rows) == 1 {
		w := p.rows[0]
		return progressStatement(w.r, w.run, w.sum, w.prev, w.batch, w.told)
	}
	n := len(p.rows)
	var (
		ids, status, reason, told = make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		iteration                 = make([]int, n)
		tokens, lastSeq, prev     = make([]int64, n), make([]int64, n), make([]int64, n)
		fenced                    = make([]bool, n)
		token, first, last        = make([]int64, n), make([]int64, n), make([]int64, n)
		cost                      = make([]float64, n)
		updated                   = make([]time.Time, n)
		events                    = make([][]byte, n)
	)
	for i, w := range p.rows {
		ids[i], status[i], reason[i], told[i] = w.run.SessionID, string(w.sum.Status), string(w.sum.Reason), string(w.told)
		iteration[i], tokens[i], cost[i], updated[i] = w.sum.Iteration, int64(w.sum.Tokens), w.sum.CostUSD, encodeTime(w.sum.UpdatedAt)
		lastSeq[i], prev[i], fenced[i], token[i] = w.sum.LastSeq, w.prev, w.r.Fenced, w.r.Token
		first[i], last[i], events[i] = w.run.First, w.run.Last, w.batch
	}
	return progressRowsSQL, []any{ids, status, reason, iteration, tokens, cost, updated, lastSeq, prev, fenced, token, first, last, events, told}
}

// progressRowsSQL is progressStatement for many sessions at once: for each
// row whose session's log still ends at prev (and, when fenced, whose
// lease token is still the row's, the lease row locked so no other server
// takes it before this commits), the session's summary is updated, the
// batch inserted and its notice sent (each taken from the row the update
// returns: joins of the rows with each other would cost the square of
// their number). The leases and sessions are looked up by the ids given
// (= ANY($1)): a plan that joins the rows with a whole table would cost
// as much as the table. It returns the ordinals of the rows written, how
// many batches were inserted and how many notices sent (one each).
const progressRowsSQL = `WITH v AS (SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::integer[], $5::bigint[],
	$6::double precision[], $7::timestamptz[], $8::bigint[], $9::bigint[], $10::boolean[], $11::bigint[], $12::bigint[],
	$13::bigint[], $14::bytea[], $15::text[]) WITH ORDINALITY
	AS v(id, status, reason, iteration, tokens, cost_usd, updated_at, last_seq, prev, fenced, token, first_seq, batch_last, events, told, ord)),
fence AS (SELECT l.session_id FROM leases l JOIN v ON l.session_id = v.id AND v.fenced AND l.token = v.token
	WHERE l.session_id = ANY($1::text[]) FOR SHARE OF l),
up AS (UPDATE sessions s SET status = v.status, reason = v.reason, iteration = v.iteration, tokens = v.tokens,
	cost_usd = v.cost_usd, updated_at = v.updated_at, last_seq = v.last_seq
	FROM v WHERE s.id = ANY($1::text[]) AND s.id = v.id AND s.last_seq = v.prev AND (NOT v.fenced OR v.id IN (SELECT session_id FROM fence))
	RETURNING s.id, v.first_seq, v.batch_last, v.events, v.told, v.ord),
ins AS (INSERT INTO event_batches (session_id, first_seq, last_seq, events)
	SELECT id, first_seq, batch_last, events FROM up RETURNING 1),
told AS (SELECT pg_notify('` + channel + `', told) FROM up)
SELECT coalesce((SELECT array_agg(ord) FROM up), '{}'), (SELECT count(*) FROM ins), (SELECT count(*) FROM told)`
