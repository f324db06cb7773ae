package store

import (
	"context"
	"time"
)

// Key is an API key as stored: never the key itself, only its hash.
type Key struct {
	ID        string // a short public name for the key, shown in lists and logs
	Hash      string // hex SHA-256 of the secret key
	Tenant    string
	Role      string // admin, operator or viewer
	Name      string // what the key is for, free text
	CreatedAt time.Time
}

// Keys stores API keys.
type Keys interface {
	// CreateKey stores a key; a hash or ID already stored is an error.
	CreateKey(ctx context.Context, k Key) error
	// KeyByHash returns the key with this hash, or ErrNotFound (wrapped).
	KeyByHash(ctx context.Context, hash string) (Key, error)
	// ListKeys returns a tenant's keys, oldest first; tenant "" lists
	// every tenant's.
	ListKeys(ctx context.Context, tenant string) ([]Key, error)
	// DeleteKey revokes key id of tenant (any tenant when tenant is ""):
	// it authenticates nothing from then on. ErrNotFound (wrapped) when
	// there is no such key.
	DeleteKey(ctx context.Context, tenant, id string) error
}
