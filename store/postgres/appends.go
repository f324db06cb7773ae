package postgres

import (
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/store/internal/appendcheck"
)

// appends is one pipeline of append statements being built. Appends that
// continue a stored session's log (progress) share statements of many
// rows, one row per session (progressRowsSQL): PostgreSQL plans, locks
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
	n     int // appends added
}

// appendItem is one statement of the pipeline: a single append's (q,
// args; acquire when it returns the lease token too), or rows.
type appendItem struct {
	k       int // the single append's number, in the order added
	q       string
	args    []any
	acquire bool
	rows    *progressRows
}

func newAppends() *appends { return &appends{last: map[string]int{}, group: -1} }

// single adds an append written by a statement of its own.
func (a *appends) single(id, q string, args []any, acquire bool) {
	a.last[id] = len(a.items)
	a.items = append(a.items, appendItem{k: a.n, q: q, args: args, acquire: acquire})
	a.n++
}

// progress adds an append that continues session id's stored log from
// prev, as progressStatement would write it.
func (a *appends) progress(r *request, run appendcheck.Run, sum loop.Summary, prev int64, batch, told []byte) {
	last, queued := a.last[run.SessionID]
	if a.group < 0 || (queued && last >= a.group) {
		a.group = len(a.items)
		a.items = append(a.items, appendItem{rows: &progressRows{}})
	}
	a.items[a.group].rows.add(a.n, r, run, sum, prev, batch, told)
	a.last[run.SessionID] = a.group
	a.n++
}

// queue queues the pipeline's statements on b.
func (a *appends) queue(b *pgx.Batch) {
	for _, it := range a.items {
		if it.rows != nil {
			b.Queue(progressRowsSQL, it.rows.args()...)
		} else {
			b.Queue(it.q, it.args...)
		}
	}
}

// read reads the outcomes of the queued statements: wrote[k] says append
// k inserted its events, and token[k], for an append that took its lease,
// the lease's token (0: not taken).
func (a *appends) read(br pgx.BatchResults) (wrote []bool, token []int64, err error) {
	wrote, token = make([]bool, a.n), make([]int64, a.n)
	for _, it := range a.items {
		if it.rows != nil {
			var (
				written        []int64
				inserted, told int64
			)
			if err := br.QueryRow().Scan(&written, &inserted, &told); err != nil {
				return nil, nil, err
			}
			if inserted != int64(len(written)) || told != inserted {
				return nil, nil, fmt.Errorf("a shared append statement wrote %d sessions' rows but inserted %d batches and sent %d notices", len(written), inserted, told)
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

// progressRows is the progress appends one shared statement writes, a
// column of values each, one row per append (at most one per session).
type progressRows struct {
	k                         []int // the appends' numbers
	ids, status, reason, told []string
	iteration                 []int
	tokens, lastSeq, prev     []int64
	fenced                    []bool
	token, first, last        []int64
	cost                      []float64
	updated                   []time.Time
	events                    [][]byte
}

func (p *progressRows) add(k int, r *request, run appendcheck.Run, sum loop.Summary, prev int64, batch, told []byte) {
	p.k = append(p.k, k)
	p.ids = append(p.ids, run.SessionID)
	p.status = append(p.status, string(sum.Status))
	p.reason = append(p.reason, string(sum.Reason))
	p.iteration = append(p.iteration, sum.Iteration)
	p.tokens = append(p.tokens, int64(sum.Tokens))
	p.cost = append(p.cost, sum.CostUSD)
	p.updated = append(p.updated, encodeTime(sum.UpdatedAt))
	p.lastSeq = append(p.lastSeq, sum.LastSeq)
	p.prev = append(p.prev, prev)
	p.fenced = append(p.fenced, r.Fenced)
	p.token = append(p.token, r.Token)
	p.first = append(p.first, run.First)
	p.last = append(p.last, run.Last)
	p.events = append(p.events, batch)
	p.told = append(p.told, string(told))
}

func (p *progressRows) args() []any {
	return []any{p.ids, p.status, p.reason, p.iteration, p.tokens, p.cost, p.updated, p.lastSeq, p.prev,
		p.fenced, p.token, p.first, p.last, p.events, p.told}
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
