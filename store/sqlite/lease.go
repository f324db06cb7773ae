package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentloop/agentloop/store"
	"github.com/agentloop/agentloop/store/internal/appendq"
)

// Leases and controls are written by the writer goroutine, each in a
// transaction of its own (see Store.exec), so in one process they never
// contend with appends for the write lock; across processes the lease row
// decides, inside BEGIN IMMEDIATE.

// Acquire takes a session's lease; see store.Leases.
func (s *Store) Acquire(ctx context.Context, id, owner string, ttl time.Duration) (store.Lease, error) {
	a := &appendq.Acquisition{Owner: owner, TTL: ttl}
	err := s.exec(ctx, "acquire session "+id, func(ctx context.Context, w *writer) error {
		reqErr, fatal := w.grant(ctx, id, a)
		if err := errors.Join(reqErr, fatal); err != nil {
			return err
		}
		_, err := w.upsertLease.ExecContext(ctx, id, owner, a.Token, a.Expires.UnixNano())
		if err != nil {
			return fmt.Errorf("sqlite store %s: write lease of %s: %w", s.path, id, err)
		}
		return nil
	})
	if err != nil {
		return store.Lease{}, err
	}
	return store.Lease{SessionID: id, Owner: owner, Token: a.Token, Expires: a.Expires}, nil
}

// upsertLeaseSQL writes a session's lease row.
const upsertLeaseSQL = `INSERT INTO leases (session_id, owner, token, expires_at) VALUES (?, ?, ?, ?)
ON CONFLICT (session_id) DO UPDATE SET owner = excluded.owner, token = excluded.token, expires_at = excluded.expires_at`

// grant sets a's token and expiry to those of the lease of session id
// that a.Owner may take now, inside the writer's transaction, or fails
// with ErrLeaseHeld (the request's own error) while another owner's lease
// is live. It writes nothing: the caller writes the lease row
// (upsertLeaseSQL).
func (w *writer) grant(ctx context.Context, id string, a *appendq.Acquisition) (reqErr, fatal error) {
	now := w.clock()
	var owner string
	var token, expires int64
	err := w.getLease.QueryRowContext(ctx, id).Scan(&owner, &token, &expires)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("sqlite store %s: read lease of %s: %w", w.path, id, err)
	}
	live := err == nil && time.Unix(0, expires).After(now)
	switch {
	case live && owner == a.Owner:
		a.Token = token // the holder renews; same token
	case live:
		return fmt.Errorf("session %s is held by %s until %s: %w", id, owner, time.Unix(0, expires).UTC().Format(time.RFC3339), store.ErrLeaseHeld), nil
	default:
		a.Token = token + 1
	}
	a.Expires = now.Add(a.TTL)
	return nil, nil
}

// Renew extends a lease still held.
func (s *Store) Renew(ctx context.Context, l store.Lease, ttl time.Duration) (store.Lease, error) {
	return store.RenewOne(ctx, s, l, ttl)
}

// RenewAll renews the leases still held in one transaction (see
// store.LeaseRenewer).
func (s *Store) RenewAll(ctx context.Context, leases []store.Lease, ttl time.Duration) ([]store.Lease, error) {
	if len(leases) == 0 {
		return nil, nil
	}
	what := fmt.Sprintf("renew %d leases", len(leases))
	if len(leases) == 1 {
		what = "renew session " + leases[0].SessionID
	}
	var renewed []store.Lease
	err := s.exec(ctx, what, func(ctx context.Context, w *writer) error {
		expires := s.opts.clock().Add(ttl)
		st, err := w.conn.PrepareContext(ctx, `UPDATE leases SET expires_at = ? WHERE session_id = ? AND token = ?`)
		if err != nil {
			return fmt.Errorf("sqlite store %s: renew leases: %w", s.path, err)
		}
		defer st.Close()
		for _, l := range leases {
			res, err := st.ExecContext(ctx, expires.UnixNano(), l.SessionID, l.Token)
			if err != nil {
				return fmt.Errorf("sqlite store %s: renew lease of %s: %w", s.path, l.SessionID, err)
			}
			if n, _ := res.RowsAffected(); n == 1 {
				l.Expires = expires
				renewed = append(renewed, l)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return renewed, nil
}

// Release expires a lease at once if it is still current.
func (s *Store) Release(ctx context.Context, l store.Lease) error {
	return s.exec(ctx, "release session "+l.SessionID, func(ctx context.Context, w *writer) error {
		_, err := w.conn.ExecContext(ctx, `UPDATE leases SET expires_at = 0 WHERE session_id = ? AND token = ?`, l.SessionID, l.Token)
		if err != nil {
			return fmt.Errorf("sqlite store %s: release lease of %s: %w", s.path, l.SessionID, err)
		}
		return nil
	})
}

// LeasesOf returns the current leases of the sessions (of all when none given).
func (s *Store) LeasesOf(ctx context.Context, ids ...string) (map[string]store.Lease, error) {
	if s.isClosed.Load() {
		return nil, fmt.Errorf("sqlite store %s: leases: %w", s.path, store.ErrClosed)
	}
	q := `SELECT session_id, owner, token, expires_at FROM leases`
	args := make([]any, len(ids))
	if len(ids) > 0 {
		q += ` WHERE session_id IN (?` + strings.Repeat(", ?", len(ids)-1) + `)`
		for i, id := range ids {
			args[i] = id
		}
	}
	rows, err := s.rdb.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, s.readErr("read leases", err)
	}
	defer rows.Close()
	out := map[string]store.Lease{}
	for rows.Next() {
		var l store.Lease
		var expires int64
		if err := rows.Scan(&l.SessionID, &l.Owner, &l.Token, &expires); err != nil {
			return nil, s.readErr("read leases", err)
		}
		l.Expires = time.Unix(0, expires).UTC()
		out[l.SessionID] = l
	}
	return out, s.readErr2("read leases", rows.Err())
}

// RequestControl stores a control request.
func (s *Store) RequestControl(ctx context.Context, c store.Control) (store.Control, error) {
	c.CreatedAt, c.Done, c.Outcome = s.opts.clock().UTC().Truncate(time.Microsecond), false, ""
	err := s.exec(ctx, "control session "+c.SessionID, func(ctx context.Context, w *writer) error {
		res, err := w.conn.ExecContext(ctx, `INSERT INTO controls (session_id, kind, text, decision, subject, created_at) VALUES (?, ?, ?, ?, ?, ?)`,
			c.SessionID, string(c.Kind), c.Text, []byte(c.Decision), c.Subject, c.CreatedAt.UnixNano())
		if err != nil {
			return fmt.Errorf("sqlite store %s: store control for %s: %w", s.path, c.SessionID, err)
		}
		c.ID, err = res.LastInsertId()
		return err
	})
	if err != nil {
		return store.Control{}, err
	}
	return c, nil
}

const controlCols = `id, session_id, kind, text, decision, subject, created_at, done, outcome`

// ControlsAfter returns pending controls with ID > after, oldest first.
func (s *Store) ControlsAfter(ctx context.Context, after int64) ([]store.Control, error) {
	return s.controls(ctx, `SELECT `+controlCols+` FROM controls WHERE done = 0 AND id > ? ORDER BY id`, after)
}

// PendingControls returns a session's pending controls, oldest first.
func (s *Store) PendingControls(ctx context.Context, id string) ([]store.Control, error) {
	return s.controls(ctx, `SELECT `+controlCols+` FROM controls WHERE session_id = ? AND done = 0 ORDER BY id`, id)
}

// Control returns one control.
func (s *Store) Control(ctx context.Context, id int64) (store.Control, error) {
	list, err := s.controls(ctx, `SELECT `+controlCols+` FROM controls WHERE id = ?`, id)
	if err != nil {
		return store.Control{}, err
	}
	if len(list) == 0 {
		return store.Control{}, fmt.Errorf("control %d: %w", id, store.ErrNotFound)
	}
	return list[0], nil
}

func (s *Store) controls(ctx context.Context, q string, arg any) ([]store.Control, error) {
	if s.isClosed.Load() {
		return nil, fmt.Errorf("sqlite store %s: controls: %w", s.path, store.ErrClosed)
	}
	rows, err := s.rdb.QueryContext(ctx, q, arg)
	if err != nil {
		return nil, s.readErr("read controls", err)
	}
	defer rows.Close()
	var out []store.Control
	for rows.Next() {
		var c store.Control
		var kind string
		var decision []byte
		var created int64
		if err := rows.Scan(&c.ID, &c.SessionID, &kind, &c.Text, &decision, &c.Subject, &created, &c.Done, &c.Outcome); err != nil {
			return nil, s.readErr("read controls", err)
		}
		c.Kind, c.CreatedAt = store.ControlKind(kind), time.Unix(0, created).UTC()
		if len(decision) > 0 {
			c.Decision = decision
		}
		out = append(out, c)
	}
	return out, s.readErr2("read controls", rows.Err())
}

// CompleteControl marks a control done; the first outcome stays.
func (s *Store) CompleteControl(ctx context.Context, id int64, outcome string) error {
	return s.exec(ctx, fmt.Sprintf("complete control %d", id), func(ctx context.Context, w *writer) error {
		res, err := w.conn.ExecContext(ctx, `UPDATE controls SET done = 1, outcome = ? WHERE id = ? AND done = 0`, outcome, id)
		if err != nil {
			return fmt.Errorf("sqlite store %s: complete control %d: %w", s.path, id, err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			var one int
			if err := w.conn.QueryRowContext(ctx, `SELECT 1 FROM controls WHERE id = ?`, id).Scan(&one); errors.Is(err, sql.ErrNoRows) {
				return fmt.Errorf("control %d: %w", id, store.ErrNotFound)
			}
		}
		return nil
	})
}

// Delete removes a session, its lease and its controls.
func (s *Store) Delete(ctx context.Context, id string) error {
	return s.exec(ctx, "delete session "+id, func(ctx context.Context, w *writer) error {
		delete(w.cache, id)
		res, err := w.conn.ExecContext(ctx, `DELETE FROM sessions WHERE id = ?`, id) // events go with it (ON DELETE CASCADE)
		if err != nil {
			return fmt.Errorf("sqlite store %s: delete session %s: %w", s.path, id, err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("session %s: %w", id, store.ErrNotFound)
		}
		// The lease row stays, expired, so a later holder of this ID gets a
		// larger token than any holder before the delete.
		for _, q := range []string{`DELETE FROM event_batches WHERE session_id = ?`, `UPDATE leases SET expires_at = 0 WHERE session_id = ?`, `DELETE FROM controls WHERE session_id = ?`} {
			if _, err := w.conn.ExecContext(ctx, q, id); err != nil {
				return fmt.Errorf("sqlite store %s: delete session %s: %w", s.path, id, err)
			}
		}
		return nil
	})
}

// readErr2 is readErr for a possibly nil error.
func (s *Store) readErr2(what string, err error) error {
	if err == nil {
		return nil
	}
	return s.readErr(what, err)
}
