package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/agentloop/agentloop/store"
)

// CreateKey stores an API key (its hash, never the key).
func (s *Store) CreateKey(ctx context.Context, k store.Key) error {
	return s.exec(ctx, "create key "+k.ID, func(ctx context.Context, w *writer) error {
		_, err := w.conn.ExecContext(ctx, `INSERT INTO api_keys (id, hash, tenant, role, name, created_at) VALUES (?, ?, ?, ?, ?, ?)`,
			k.ID, k.Hash, k.Tenant, k.Role, k.Name, k.CreatedAt.UnixNano())
		if err != nil {
			return fmt.Errorf("sqlite store %s: create key %s: %w", s.path, k.ID, err)
		}
		return nil
	})
}

// KeyByHash returns the key with this hash.
func (s *Store) KeyByHash(ctx context.Context, hash string) (store.Key, error) {
	if s.isClosed.Load() {
		return store.Key{}, fmt.Errorf("sqlite store %s: keys: %w", s.path, store.ErrClosed)
	}
	var k store.Key
	var created int64
	err := s.rdb.QueryRowContext(ctx, `SELECT id, hash, tenant, role, name, created_at FROM api_keys WHERE hash = ?`, hash).
		Scan(&k.ID, &k.Hash, &k.Tenant, &k.Role, &k.Name, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return store.Key{}, fmt.Errorf("api key: %w", store.ErrNotFound)
	}
	if err != nil {
		return store.Key{}, s.readErr("read key", err)
	}
	k.CreatedAt = time.Unix(0, created).UTC()
	return k, nil
}
