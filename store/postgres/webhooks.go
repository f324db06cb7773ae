package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/agentloop/agentloop/store"
)

// The webhook tables live outside the numbered migrations: they are made
// by PrepareWebhooks, when a server first sends notifications.
const webhookSchema = `
CREATE TABLE IF NOT EXISTS webhooks (
	tenant     TEXT        NOT NULL,
	id         TEXT        NOT NULL,
	url        TEXT        NOT NULL,
	secret     TEXT        NOT NULL,
	created_at TIMESTAMPTZ NOT NULL,
	PRIMARY KEY (tenant, id)
);
CREATE TABLE IF NOT EXISTS webhook_deliveries (
	id          TEXT        NOT NULL PRIMARY KEY,
	event_id    TEXT        NOT NULL,
	tenant      TEXT        NOT NULL,
	session_id  TEXT        NOT NULL,
	kind        TEXT        NOT NULL,
	webhook_id  TEXT        NOT NULL,
	url         TEXT        NOT NULL,
	secret      TEXT        NOT NULL,
	body        BYTEA       NOT NULL,
	status      TEXT        NOT NULL,
	attempts    INTEGER     NOT NULL,
	last_error  TEXT        NOT NULL,
	next_at     TIMESTAMPTZ NOT NULL,
	lease_owner TEXT        NOT NULL DEFAULT '',
	lease_until TIMESTAMPTZ NOT NULL DEFAULT 'epoch',
	created_at  TIMESTAMPTZ NOT NULL,
	updated_at  TIMESTAMPTZ NOT NULL
);
CREATE INDEX IF NOT EXISTS webhook_deliveries_due ON webhook_deliveries (status, next_at);
CREATE INDEX IF NOT EXISTS webhook_deliveries_tenant ON webhook_deliveries (tenant, created_at DESC);
`

// webhookLock keeps two servers from creating the tables at once.
const webhookLock = 0x6167656e74776868 // "agentwhh"

// PrepareWebhooks creates the webhook tables when they are missing.
func (s *Store) PrepareWebhooks(ctx context.Context) error {
	if err := s.checkOpen("create webhook tables"); err != nil {
		return err
	}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(webhookLock)); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, webhookSchema)
		return err
	})
	if err != nil {
		return s.errf("create webhook tables: %w", err)
	}
	return nil
}

// PutWebhook stores a webhook, keeping the creation time of the one it replaces.
func (s *Store) PutWebhook(ctx context.Context, h store.Webhook) (store.Webhook, error) {
	if err := s.checkOpen("store webhook"); err != nil {
		return h, err
	}
	if h.CreatedAt.IsZero() {
		h.CreatedAt = s.opts.clock()
	}
	err := s.pool.QueryRow(ctx, `INSERT INTO webhooks (tenant, id, url, secret, created_at) VALUES ($1, $2, $3, $4, $5)
ON CONFLICT (tenant, id) DO UPDATE SET url = excluded.url, secret = excluded.secret RETURNING created_at`,
		h.Tenant, h.ID, h.URL, h.Secret, encodeTime(h.CreatedAt)).Scan(&h.CreatedAt)
	if err != nil {
		return h, s.errf("webhook %s: %w", h.ID, err)
	}
	h.CreatedAt = h.CreatedAt.UTC()
	return h, nil
}

// ListWebhooks returns a tenant's webhooks (every tenant's with all).
func (s *Store) ListWebhooks(ctx context.Context, tenant string, all bool) ([]store.Webhook, error) {
	if err := s.checkOpen("webhooks"); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, `SELECT tenant, id, url, secret, created_at FROM webhooks WHERE $1 OR tenant = $2 ORDER BY created_at, id`, all, tenant)
	if err != nil {
		return nil, s.readErr("read webhooks", err)
	}
	defer rows.Close()
	var out []store.Webhook
	for rows.Next() {
		var h store.Webhook
		if err := rows.Scan(&h.Tenant, &h.ID, &h.URL, &h.Secret, &h.CreatedAt); err != nil {
			return nil, s.readErr("read webhooks", err)
		}
		h.CreatedAt = h.CreatedAt.UTC()
		out = append(out, h)
	}
	return out, s.readErr("read webhooks", rows.Err())
}

// DeleteWebhook removes a webhook.
func (s *Store) DeleteWebhook(ctx context.Context, tenant, id string) error {
	if err := s.checkOpen("delete webhook"); err != nil {
		return err
	}
	tag, err := s.pool.Exec(ctx, `DELETE FROM webhooks WHERE tenant = $1 AND id = $2`, tenant, id)
	if err != nil {
		return s.errf("delete webhook %s: %w", id, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("webhook %s: %w", id, store.ErrNotFound)
	}
	return nil
}

// EnqueueDeliveries adds pending deliveries, skipping IDs already queued.
func (s *Store) EnqueueDeliveries(ctx context.Context, ds []store.Delivery) error {
	if err := s.checkOpen("enqueue deliveries"); err != nil {
		return err
	}
	now := encodeTime(s.opts.clock())
	b := &pgx.Batch{}
	for _, d := range ds {
		b.Queue(`INSERT INTO webhook_deliveries
(id, event_id, tenant, session_id, kind, webhook_id, url, secret, body, status, attempts, last_error, next_at, created_at, updated_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, 0, '', $11, $11, $11) ON CONFLICT (id) DO NOTHING`,
			d.ID, d.EventID, d.Tenant, d.SessionID, d.Kind, d.WebhookID, d.URL, d.Secret, d.Body, store.DeliveryPending, now)
	}
	if err := s.pool.SendBatch(ctx, b).Close(); err != nil {
		return s.errf("enqueue deliveries: %w", err)
	}
	return nil
}

const deliveryCols = `id, event_id, tenant, session_id, kind, webhook_id, url, status, attempts, last_error, next_at, created_at, updated_at`

// ClaimDeliveries leases due pending deliveries to owner; rows another
// server is claiming at the same moment are skipped, not waited for.
func (s *Store) ClaimDeliveries(ctx context.Context, owner string, now time.Time, lease time.Duration, n int) ([]store.Delivery, error) {
	if err := s.checkOpen("claim deliveries"); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, `UPDATE webhook_deliveries SET lease_owner = $1, lease_until = $2
WHERE id IN (SELECT id FROM webhook_deliveries WHERE status = $3 AND next_at <= $4 AND lease_until <= $4 ORDER BY next_at LIMIT $5 FOR UPDATE SKIP LOCKED)
RETURNING `+deliveryCols+`, secret, body`, owner, encodeTime(now.Add(lease)), store.DeliveryPending, encodeTime(now), n)
	if err != nil {
		return nil, s.readErr("claim deliveries", err)
	}
	return s.scanDeliveries(rows, true, "claim deliveries")
}

// FinishAttempt records an attempt of a delivery owner holds.
func (s *Store) FinishAttempt(ctx context.Context, owner string, d store.Delivery) (bool, error) {
	if err := s.checkOpen("finish delivery"); err != nil {
		return false, err
	}
	tag, err := s.pool.Exec(ctx, `UPDATE webhook_deliveries SET status = $1, attempts = $2, last_error = $3, next_at = $4, updated_at = $5, lease_owner = '', lease_until = 'epoch'
WHERE id = $6 AND lease_owner = $7`, d.Status, d.Attempts, d.LastError, encodeTime(d.NextAt), encodeTime(s.opts.clock()), d.ID, owner)
	if err != nil {
		return false, s.errf("finish delivery %s: %w", d.ID, err)
	}
	return tag.RowsAffected() == 1, nil
}

// ListDeliveries returns a tenant's latest deliveries (every tenant's with all).
func (s *Store) ListDeliveries(ctx context.Context, tenant string, all bool, limit int) ([]store.Delivery, error) {
	if err := s.checkOpen("deliveries"); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, `SELECT `+deliveryCols+` FROM webhook_deliveries WHERE $1 OR tenant = $2 ORDER BY created_at DESC, id LIMIT $3`, all, tenant, limit)
	if err != nil {
		var pe *pgconn.PgError
		if errors.As(err, &pe) && pe.Code == "42P01" { // undefined_table: no notifications sent yet
			return nil, nil
		}
		return nil, s.readErr("read deliveries", err)
	}
	return s.scanDeliveries(rows, false, "read deliveries")
}

func (s *Store) scanDeliveries(rows pgx.Rows, full bool, what string) ([]store.Delivery, error) {
	defer rows.Close()
	var out []store.Delivery
	for rows.Next() {
		var d store.Delivery
		dst := []any{&d.ID, &d.EventID, &d.Tenant, &d.SessionID, &d.Kind, &d.WebhookID, &d.URL, &d.Status, &d.Attempts, &d.LastError, &d.NextAt, &d.CreatedAt, &d.UpdatedAt}
		if full {
			dst = append(dst, &d.Secret, &d.Body)
		}
		if err := rows.Scan(dst...); err != nil {
			return nil, s.readErr(what, err)
		}
		d.NextAt, d.CreatedAt, d.UpdatedAt = d.NextAt.UTC(), d.CreatedAt.UTC(), d.UpdatedAt.UTC()
		out = append(out, d)
	}
	return out, s.readErr(what, rows.Err())
}
