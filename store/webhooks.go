package store

import (
	"context"
	"time"
)

// Webhook is a URL a tenant's notifications are sent to, signed with
// Secret (HMAC-SHA256). Tenant "" with ID "server" is the server's own
// (agentloop serve --webhook), which hears every tenant.
type Webhook struct {
	ID        string    `json:"id"`
	Tenant    string    `json:"tenant,omitempty"`
	URL       string    `json:"url"`
	Secret    string    `json:"-"`
	CreatedAt time.Time `json:"created_at"`
}

// Delivery states.
const (
	DeliveryPending   = "pending"   // waiting for its next attempt
	DeliveryDelivered = "delivered" // the receiver answered 2xx
	DeliveryFailed    = "failed"    // given up after the last attempt
)

// Delivery is one notification to one URL. ID is unique per target and
// event, so enqueueing the same event twice adds nothing; EventID
// (session:seq) is what the receiver deduplicates by. Body is the exact
// bytes sent (and signed) on every attempt.
type Delivery struct {
	ID        string    `json:"id"`
	EventID   string    `json:"event_id"`
	Tenant    string    `json:"tenant,omitempty"`
	SessionID string    `json:"session_id"`
	Kind      string    `json:"kind"`
	WebhookID string    `json:"webhook_id,omitempty"`
	URL       string    `json:"url"`
	Secret    string    `json:"-"`
	Body      []byte    `json:"-"`
	Status    string    `json:"status"`
	Attempts  int       `json:"attempts"`
	LastError string    `json:"last_error,omitempty"`
	NextAt    time.Time `json:"next_at"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Webhooks stores webhooks and the durable queue of their deliveries.
// Claims are leases: a delivery claimed by one process is not handed to
// another until the lease runs out, so servers sharing a database do not
// both send it in the normal case (a process that dies mid-send leaves it
// to be sent again: delivery is at least once).
type Webhooks interface {
	// PrepareWebhooks creates the tables when they are missing; call it
	// once before the rest.
	PrepareWebhooks(ctx context.Context) error
	// PutWebhook stores w, replacing the webhook with its tenant and ID
	// (its creation time then stays).
	PutWebhook(ctx context.Context, w Webhook) (Webhook, error)
	// ListWebhooks returns a tenant's webhooks, oldest first; with all
	// set, every tenant's.
	ListWebhooks(ctx context.Context, tenant string, all bool) ([]Webhook, error)
	// DeleteWebhook removes one, or fails with ErrNotFound.
	DeleteWebhook(ctx context.Context, tenant, id string) error
	// EnqueueDeliveries adds pending deliveries; one whose ID is already
	// queued (in any state) is skipped.
	EnqueueDeliveries(ctx context.Context, ds []Delivery) error
	// ClaimDeliveries leases up to n pending deliveries due at now to
	// owner until now+lease and returns them with their secrets and bodies.
	ClaimDeliveries(ctx context.Context, owner string, now time.Time, lease time.Duration, n int) ([]Delivery, error)
	// FinishAttempt records an attempt of a claimed delivery: its status,
	// attempts, last error and next time, and ends owner's lease. It
	// reports false when owner no longer held the lease (nothing changed).
	FinishAttempt(ctx context.Context, owner string, d Delivery) (bool, error)
	// ListDeliveries returns a tenant's latest deliveries (every tenant's
	// with all set), newest first, without secrets or bodies.
	ListDeliveries(ctx context.Context, tenant string, all bool, limit int) ([]Delivery, error)
}
