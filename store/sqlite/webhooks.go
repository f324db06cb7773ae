package sqlite

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/agentloop/agentloop/store"
)

// The webhook tables live outside the numbered migrations: they are made
// by PrepareWebhooks, when a server first sends notifications, and a
// database that never did has none.
const webhookSchema = `
CREATE TABLE IF NOT EXISTS webhooks (
	tenant     TEXT    NOT NULL,
	id         TEXT    NOT NULL,
	url        TEXT    NOT NULL,
	secret     TEXT    NOT NULL,
	created_at INTEGER NOT NULL, -- Unix nanoseconds
	PRIMARY KEY (tenant, id)
);
CREATE TABLE IF NOT EXISTS webhook_deliveries (
	id          TEXT    NOT NULL PRIMARY KEY, -- target and event: enqueueing twice adds nothing
	event_id    TEXT    NOT NULL,
	tenant      TEXT    NOT NULL,
	session_id  TEXT    NOT NULL,
	kind        TEXT    NOT NULL,
	webhook_id  TEXT    NOT NULL,
	url         TEXT    NOT NULL,
	secret      TEXT    NOT NULL,
	body        BLOB    NOT NULL,
	status      TEXT    NOT NULL,
	attempts    INTEGER NOT NULL,
	last_error  TEXT    NOT NULL,
	next_at     INTEGER NOT NULL,
	lease_owner TEXT    NOT NULL DEFAULT '',
	lease_until INTEGER NOT NULL DEFAULT 0,
	created_at  INTEGER NOT NULL,
	updated_at  INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS webhook_deliveries_due ON webhook_deliveries (status, next_at);
CREATE INDEX IF NOT EXISTS webhook_deliveries_tenant ON webhook_deliveries (tenant, created_at DESC);
`

// PrepareWebhooks creates the webhook tables when they are missing.
func (s *Store) PrepareWebhooks(ctx context.Context) error {
	return s.exec(ctx, "create webhook tables", func(ctx context.Context, w *writer) error {
		if _, err := w.conn.ExecContext(ctx, webhookSchema); err != nil {
			return fmt.Errorf("sqlite store %s: create webhook tables: %w", s.path, err)
		}
		return nil
	})
}

// PutWebhook stores a webhook, keeping the creation time of the one it replaces.
func (s *Store) PutWebhook(ctx context.Context, h store.Webhook) (store.Webhook, error) {
	if h.CreatedAt.IsZero() {
		h.CreatedAt = s.opts.clock().UTC()
	}
	err := s.exec(ctx, "store webhook "+h.ID, func(ctx context.Context, w *writer) error {
		var created int64
		err := w.conn.QueryRowContext(ctx, `INSERT INTO webhooks (tenant, id, url, secret, created_at) VALUES (?, ?, ?, ?, ?)
ON CONFLICT (tenant, id) DO UPDATE SET url = excluded.url, secret = excluded.secret RETURNING created_at`,
			h.Tenant, h.ID, h.URL, h.Secret, h.CreatedAt.UnixNano()).Scan(&created)
		if err != nil {
			return fmt.Errorf("sqlite store %s: webhook %s: %w", s.path, h.ID, err)
		}
		h.CreatedAt = time.Unix(0, created).UTC()
		return nil
	})
	return h, err
}

// ListWebhooks returns a tenant's webhooks (every tenant's with all).
func (s *Store) ListWebhooks(ctx context.Context, tenant string, all bool) ([]store.Webhook, error) {
	rows, err := s.rdb.QueryContext(ctx, `SELECT tenant, id, url, secret, created_at FROM webhooks WHERE ? OR tenant = ? ORDER BY created_at, id`, all, tenant)
	if err != nil {
		return nil, s.readErr("read webhooks", err)
	}
	defer rows.Close()
	var out []store.Webhook
	for rows.Next() {
		var h store.Webhook
		var created int64
		if err := rows.Scan(&h.Tenant, &h.ID, &h.URL, &h.Secret, &created); err != nil {
			return nil, s.readErr("read webhooks", err)
		}
		h.CreatedAt = time.Unix(0, created).UTC()
		out = append(out, h)
	}
	return out, s.readErr2("read webhooks", rows.Err())
}

// DeleteWebhook removes a webhook.
func (s *Store) DeleteWebhook(ctx context.Context, tenant, id string) error {
	return s.exec(ctx, "delete webhook "+id, func(ctx context.Context, w *writer) error {
		res, err := w.conn.ExecContext(ctx, `DELETE FROM webhooks WHERE tenant = ? AND id = ?`, tenant, id)
		if err != nil {
			return fmt.Errorf("sqlite store %s: delete webhook %s: %w", s.path, id, err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("webhook %s: %w", id, store.ErrNotFound)
		}
		return nil
	})
}

// EnqueueDeliveries adds pending deliveries, skipping IDs already queued.
func (s *Store) EnqueueDeliveries(ctx context.Context, ds []store.Delivery) error {
	if len(ds) == 0 {
		return nil
	}
	now := s.opts.clock().UnixNano()
	return s.exec(ctx, "enqueue deliveries", func(ctx context.Context, w *writer) error {
		for _, d := range ds {
			_, err := w.conn.ExecContext(ctx, `INSERT INTO webhook_deliveries
(id, event_id, tenant, session_id, kind, webhook_id, url, secret, body, status, attempts, last_error, next_at, created_at, updated_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, '', ?, ?, ?) ON CONFLICT (id) DO NOTHING`,
				d.ID, d.EventID, d.Tenant, d.SessionID, d.Kind, d.WebhookID, d.URL, d.Secret, d.Body, store.DeliveryPending, now, now, now)
			if err != nil {
				return fmt.Errorf("sqlite store %s: enqueue delivery %s: %w", s.path, d.ID, err)
			}
		}
		return nil
	})
}

const deliveryCols = `id, event_id, tenant, session_id, kind, webhook_id, url, status, attempts, last_error, next_at, created_at, updated_at`

// ClaimDeliveries leases due pending deliveries to owner.
func (s *Store) ClaimDeliveries(ctx context.Context, owner string, now time.Time, lease time.Duration, n int) ([]store.Delivery, error) {
	var out []store.Delivery
	err := s.exec(ctx, "claim deliveries", func(ctx context.Context, w *writer) error {
		out = out[:0]
		rows, err := w.conn.QueryContext(ctx, `UPDATE webhook_deliveries SET lease_owner = ?, lease_until = ?
WHERE id IN (SELECT id FROM webhook_deliveries WHERE status = ? AND next_at <= ? AND lease_until <= ? ORDER BY next_at LIMIT ?)
RETURNING `+deliveryCols+`, secret, body`, owner, now.Add(lease).UnixNano(), store.DeliveryPending, now.UnixNano(), now.UnixNano(), n)
		if err != nil {
			return fmt.Errorf("sqlite store %s: claim deliveries: %w", s.path, err)
		}
		defer rows.Close()
		for rows.Next() {
			d, err := scanDelivery(rows.Scan, true)
			if err != nil {
				return fmt.Errorf("sqlite store %s: claim deliveries: %w", s.path, err)
			}
			out = append(out, d)
		}
		return rows.Err()
	})
	return out, err
}

// FinishAttempt records an attempt of a delivery owner holds.
func (s *Store) FinishAttempt(ctx context.Context, owner string, d store.Delivery) (bool, error) {
	held := false
	err := s.exec(ctx, "finish delivery "+d.ID, func(ctx context.Context, w *writer) error {
		res, err := w.conn.ExecContext(ctx, `UPDATE webhook_deliveries SET status = ?, attempts = ?, last_error = ?, next_at = ?, updated_at = ?, lease_owner = '', lease_until = 0
WHERE id = ? AND lease_owner = ?`, d.Status, d.Attempts, d.LastError, d.NextAt.UnixNano(), s.opts.clock().UnixNano(), d.ID, owner)
		if err != nil {
			return fmt.Errorf("sqlite store %s: finish delivery %s: %w", s.path, d.ID, err)
		}
		n, _ := res.RowsAffected()
		held = n == 1
		return nil
	})
	return held, err
}

// ListDeliveries returns a tenant's latest deliveries (every tenant's with all).
func (s *Store) ListDeliveries(ctx context.Context, tenant string, all bool, limit int) ([]store.Delivery, error) {
	rows, err := s.rdb.QueryContext(ctx, `SELECT `+deliveryCols+` FROM webhook_deliveries WHERE ? OR tenant = ? ORDER BY created_at DESC, id LIMIT ?`, all, tenant, limit)
	if err != nil {
		if strings.Contains(err.Error(), "no such table") {
			return nil, nil
		}
		return nil, s.readErr("read deliveries", err)
	}
	defer rows.Close()
	var out []store.Delivery
	for rows.Next() {
		d, err := scanDelivery(rows.Scan, false)
		if err != nil {
			return nil, s.readErr("read deliveries", err)
		}
		out = append(out, d)
	}
	return out, s.readErr2("read deliveries", rows.Err())
}

func scanDelivery(scan func(...any) error, full bool) (store.Delivery, error) {
	var d store.Delivery
	var next, created, updated int64
	dst := []any{&d.ID, &d.EventID, &d.Tenant, &d.SessionID, &d.Kind, &d.WebhookID, &d.URL, &d.Status, &d.Attempts, &d.LastError, &next, &created, &updated}
	if full {
		dst = append(dst, &d.Secret, &d.Body)
	}
	if err := scan(dst...); err != nil {
		return d, err
	}
	d.NextAt, d.CreatedAt, d.UpdatedAt = time.Unix(0, next).UTC(), time.Unix(0, created).UTC(), time.Unix(0, updated).UTC()
	return d, nil
}
