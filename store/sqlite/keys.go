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

// ListKeys returns a tenant's keys (every tenant's for ""), oldest first.
func (s *Store) ListKeys(ctx context.Context, tenant string) ([]store.Key, error) {
	if s.isClosed.Load() {
		return nil, fmt.Errorf("sqlite store %s: keys: %w", s.path, store.ErrClosed)
	}
	rows, err := s.rdb.QueryContext(ctx, `SELECT id, hash, tenant, role, name, created_at FROM api_keys WHERE ? = '' OR tenant = ? ORDER BY created_at, id`, tenant, tenant)
	if err != nil {
		return nil, s.readErr("list keys", err)
	}
	defer rows.Close()
	var out []store.Key
	for rows.Next() {
		var k store.Key
		var created int64
		if err := rows.Scan(&k.ID, &k.Hash, &k.Tenant, &k.Role, &k.Name, &created); err != nil {
			return nil, s.readErr("list keys", err)
		}
		k.CreatedAt = time.Unix(0, created).UTC()
		out = append(out, k)
	}
	if err := rows.Err(); err != nil {
		return nil, s.readErr("list keys", err)
	}
	return out, nil
}

// DeleteKey revokes a key.
func (s *Store) DeleteKey(ctx context.Context, tenant, id string) error {
	return s.exec(ctx, "delete key "+id, func(ctx context.Context, w *writer) error {
		res, err := w.conn.ExecContext(ctx, `DELETE FROM api_keys WHERE id = ? AND (? = '' OR tenant = ?)`, id, tenant, tenant)
		if err != nil {
			return fmt.Errorf("sqlite store %s: delete key %s: %w", s.path, id, err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("api key %s: %w", id, store.ErrNotFound)
		}
		return nil
	})
}
