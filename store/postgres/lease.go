package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentloop/agentloop/store"
	"github.com/agentloop/agentloop/store/internal/appendq"
)

// Leases and controls run in transactions of their own on the pool: the
// lease row decides who owns a session, under FOR UPDATE, so two servers
// acquiring at once are served one after the other.

// Acquire takes a session's lease; see store.Leases.
func (s *Store) Acquire(ctx context.Context, id, owner string, ttl time.Duration) (store.Lease, error) {
	if err := s.checkOpen("acquire session " + id); err != nil {
		return store.Lease{}, err
	}
	a := &appendq.Acquisition{Owner: owner, TTL: ttl}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		reqErr, fatal := s.grant(ctx, tx, id, a, false)
		return errors.Join(reqErr, fatal)
	})
	if err != nil {
		return store.Lease{}, err
	}
	return store.Lease{SessionID: id, Owner: owner, Token: a.Token, Expires: a.Expires}, nil
}

// grant takes the lease of session id for a.Owner inside tx, setting a's
// token and expiry, or fails with ErrLeaseHeld (reqErr) while another
// owner's lease is live; with savepoint, it first sets SAVEPOINT acquire.
// It is one round trip: the lease row is made if missing, then updated
// only if free or a.Owner's — an UPDATE that locks the row and, when
// another server changed it meanwhile, decides on its latest version, so
// two servers acquiring at once are served one after the other.
func (s *Store) grant(ctx context.Context, tx pgx.Tx, id string, a *appendq.Acquisition, savepoint bool) (reqErr, fatal error) {
	now := s.leaseTimes(a)
	var b pgx.Batch
	if savepoint {
		b.Queue("SAVEPOINT acquire")
	}
	b.Queue(takeLeaseSQL(`VALUES ($1, $2, 1, $4)`, "$3"), id, a.Owner, now, a.Expires)
	br := tx.SendBatch(ctx, &b)
	for range b.Len() - 1 {
		if _, err := br.Exec(); err != nil {
			br.Close()
			return nil, s.errf("lease of %s: %w", id, err)
		}
	}
	err := br.QueryRow().Scan(&a.Token)
	if cerr := br.Close(); err == nil && cerr != nil {
		return nil, s.errf("lease of %s: %w", id, cerr)
	}
	if errors.Is(err, pgx.ErrNoRows) {
		var cur store.Lease
		if err := tx.QueryRow(ctx, `SELECT owner, expires_at FROM leases WHERE session_id = $1`, id).Scan(&cur.Owner, &cur.Expires); err != nil {
			return nil, s.errf("read lease of %s: %w", id, err)
		}
		return fmt.Errorf("session %s is held by %s until %s: %w", id, cur.Owner, cur.Expires.UTC().Format(time.RFC3339), store.ErrLeaseHeld), nil
	}
	if err != nil {
		return nil, s.errf("write lease of %s: %w", id, err)
	}
	return nil, nil
}

// leaseTimes sets the expiry of a lease taken now (by a) and returns now.
func (s *Store) leaseTimes(a *appendq.Acquisition) (now time.Time) {
	now = encodeTime(s.opts.clock())
	a.Expires = encodeTime(now.Add(a.TTL))
	return now
}

// takeLeaseSQL takes a session's lease for an owner and returns its
// token: a new lease has token 1, the owner's own live lease keeps its
// token, an expired one is taken over with the next; another owner's
// live lease is left alone, and no row is returned. values gives the row
// to insert (session, owner, 1, expiry: a VALUES or a SELECT, which may
// insert nothing); now is the placeholder of the time it is taken at.
func takeLeaseSQL(values, now string) string {
	return `INSERT INTO leases (session_id, owner, token, expires_at) ` + values + `
ON CONFLICT (session_id) DO UPDATE SET owner = EXCLUDED.owner, expires_at = EXCLUDED.expires_at,
	token = CASE WHEN leases.owner = EXCLUDED.owner AND leases.expires_at > ` + now + ` THEN leases.token ELSE leases.token + 1 END
WHERE leases.expires_at <= ` + now + ` OR leases.owner = EXCLUDED.owner
RETURNING token`
}

// Renew extends a lease still held.
func (s *Store) Renew(ctx context.Context, l store.Lease, ttl time.Duration) (store.Lease, error) {
	if err := s.checkOpen("renew session " + l.SessionID); err != nil {
		return store.Lease{}, err
	}
	l.Expires = encodeTime(s.opts.clock().Add(ttl))
	tag, err := s.pool.Exec(ctx, `UPDATE leases SET expires_at = $1 WHERE session_id = $2 AND token = $3`, l.Expires, l.SessionID, l.Token)
	if err != nil {
		return store.Lease{}, s.errf("renew lease of %s: %w", l.SessionID, err)
	}
	if tag.RowsAffected() != 1 {
		return store.Lease{}, fmt.Errorf("session %s, token %d: %w", l.SessionID, l.Token, store.ErrLeaseLost)
	}
	return l, nil
}

// RenewAll renews the leases still held in one statement (see
// store.LeaseRenewer). It never waits for a lease row while holding
// others: the writer's appends hold their sessions' lease rows (FOR
// SHARE) until they commit, so a statement locking a thousand rows in
// turn could wait on one while an append waits on another it holds — a
// deadlock PostgreSQL would break by failing the appends. Rows locked at
// the moment are skipped and renewed one by one after, each wait on one
// lock only.
func (s *Store) RenewAll(ctx context.Context, leases []store.Lease, ttl time.Duration) ([]store.Lease, error) {
	if len(leases) == 0 {
		return nil, nil
	}
	if err := s.checkOpen(fmt.Sprintf("renew %d leases", len(leases))); err != nil {
		return nil, err
	}
	ids, tokens := make([]string, len(leases)), make([]int64, len(leases))
	for i, l := range leases {
		ids[i], tokens[i] = l.SessionID, l.Token
	}
	expires := encodeTime(s.opts.clock().Add(ttl))
	rows, err := s.pool.Query(ctx, `WITH free AS (
	SELECT leases.session_id FROM leases
	JOIN unnest($2::text[], $3::bigint[]) AS held (session_id, token)
		ON leases.session_id = held.session_id AND leases.token = held.token
	FOR NO KEY UPDATE OF leases SKIP LOCKED)
UPDATE leases SET expires_at = $1 FROM free WHERE leases.session_id = free.session_id
RETURNING leases.session_id, leases.token`, expires, ids, tokens)
	if err != nil {
		return nil, s.errf("renew %d leases: %w", len(leases), err)
	}
	type held struct {
		id    string
		token int64
	}
	done := map[held]bool{}
	var h held
	if _, err := pgx.ForEachRow(rows, []any{&h.id, &h.token}, func() error { done[h] = true; return nil }); err != nil {
		return nil, s.errf("renew %d leases: %w", len(leases), err)
	}
	var renewed []store.Lease
	for _, l := range leases {
		if done[held{l.SessionID, l.Token}] {
			l.Expires = expires
			renewed = append(renewed, l)
			continue
		}
		// Locked by an append in flight, or lost: this waits for the one.
		got, err := store.RenewEach(ctx, s, []store.Lease{l}, ttl)
		if err != nil {
			return nil, err
		}
		renewed = append(renewed, got...)
	}
	return renewed, nil
}

// Release expires a lease at once if its token is still current.
func (s *Store) Release(ctx context.Context, l store.Lease) error {
	if err := s.checkOpen("release session " + l.SessionID); err != nil {
		return err
	}
	if _, err := s.pool.Exec(ctx, `UPDATE leases SET expires_at = 'epoch' WHERE session_id = $1 AND token = $2`, l.SessionID, l.Token); err != nil {
		return s.errf("release lease of %s: %w", l.SessionID, err)
	}
	return nil
}

// LeasesOf returns the current leases of the sessions (of all when none given).
func (s *Store) LeasesOf(ctx context.Context, ids ...string) (map[string]store.Lease, error) {
	if err := s.checkOpen("leases"); err != nil {
		return nil, err
	}
	q, args := `SELECT session_id, owner, token, expires_at FROM leases WHERE owner <> ''`, []any{}
	if len(ids) > 0 {
		q, args = q+` AND session_id = ANY($1)`, []any{ids}
	}
	rows, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, s.readErr("read leases", err)
	}
	defer rows.Close()
	out := map[string]store.Lease{}
	for rows.Next() {
		var l store.Lease
		if err := rows.Scan(&l.SessionID, &l.Owner, &l.Token, &l.Expires); err != nil {
			return nil, s.readErr("read leases", err)
		}
		l.Expires = l.Expires.UTC()
		out[l.SessionID] = l
	}
	return out, s.readErr("read leases", rows.Err())
}

// RequestControl stores a control request.
func (s *Store) RequestControl(ctx context.Context, c store.Control) (store.Control, error) {
	if err := s.checkOpen("control session " + c.SessionID); err != nil {
		return store.Control{}, err
	}
	c.CreatedAt, c.Done, c.Outcome = encodeTime(s.opts.clock()), false, ""
	var decision any
	if len(c.Decision) > 0 {
		decision = string(c.Decision)
	}
	err := s.pool.QueryRow(ctx, `INSERT INTO controls (session_id, kind, text, decision, subject, created_at) VALUES ($1, $2, $3, $4::json, $5, $6) RETURNING id`,
		c.SessionID, string(c.Kind), c.Text, decision, c.Subject, c.CreatedAt).Scan(&c.ID)
	if err != nil {
		return store.Control{}, s.errf("store control for %s: %w", c.SessionID, err)
	}
	return c, nil
}

const controlCols = `id, session_id, kind, text, decision, subject, created_at, done, outcome`

// ControlsAfter returns pending controls with ID > after, oldest first.
func (s *Store) ControlsAfter(ctx context.Context, after int64) ([]store.Control, error) {
	return s.controls(ctx, `SELECT `+controlCols+` FROM controls WHERE NOT done AND id > $1 ORDER BY id`, after)
}

// PendingControls returns a session's pending controls, oldest first.
func (s *Store) PendingControls(ctx context.Context, id string) ([]store.Control, error) {
	return s.controls(ctx, `SELECT `+controlCols+` FROM controls WHERE session_id = $1 AND NOT done ORDER BY id`, id)
}

// Control returns one control.
func (s *Store) Control(ctx context.Context, id int64) (store.Control, error) {
	list, err := s.controls(ctx, `SELECT `+controlCols+` FROM controls WHERE id = $1`, id)
	if err != nil {
		return store.Control{}, err
	}
	if len(list) == 0 {
		return store.Control{}, fmt.Errorf("control %d: %w", id, store.ErrNotFound)
	}
	return list[0], nil
}

func (s *Store) controls(ctx context.Context, q string, arg any) ([]store.Control, error) {
	if err := s.checkOpen("controls"); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, q, arg)
	if err != nil {
		return nil, s.readErr("read controls", err)
	}
	defer rows.Close()
	var out []store.Control
	for rows.Next() {
		var c store.Control
		var kind string
		var decision []byte
		if err := rows.Scan(&c.ID, &c.SessionID, &kind, &c.Text, &decision, &c.Subject, &c.CreatedAt, &c.Done, &c.Outcome); err != nil {
			return nil, s.readErr("read controls", err)
		}
		c.Kind, c.CreatedAt = store.ControlKind(kind), c.CreatedAt.UTC()
		if len(decision) > 0 {
			c.Decision = decision
		}
		out = append(out, c)
	}
	return out, s.readErr("read controls", rows.Err())
}

// CompleteControl marks a control done; the first outcome stays.
func (s *Store) CompleteControl(ctx context.Context, id int64, outcome string) error {
	if err := s.checkOpen("complete control"); err != nil {
		return err
	}
	tag, err := s.pool.Exec(ctx, `UPDATE controls SET done = true, outcome = $1 WHERE id = $2 AND NOT done`, outcome, id)
	if err != nil {
		return s.errf("complete control %d: %w", id, err)
	}
	if tag.RowsAffected() == 0 {
		var one int
		if err := s.pool.QueryRow(ctx, `SELECT 1 FROM controls WHERE id = $1`, id).Scan(&one); errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("control %d: %w", id, store.ErrNotFound)
		}
	}
	return nil
}
