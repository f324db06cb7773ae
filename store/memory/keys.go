package memory

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/agentloop/agentloop/store"
)

// CreateKey stores an API key.
func (s *Store) CreateKey(ctx context.Context, k store.Key) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.keys == nil {
		s.keys = map[string]store.Key{}
	}
	for _, o := range s.keys {
		if o.ID == k.ID || o.Hash == k.Hash {
			return fmt.Errorf("memory store: key %s already exists", k.ID)
		}
	}
	s.keys[k.Hash] = k
	return nil
}

// KeyByHash returns the key with this hash.
func (s *Store) KeyByHash(ctx context.Context, hash string) (store.Key, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	k, ok := s.keys[hash]
	if !ok {
		return store.Key{}, fmt.Errorf("api key: %w", store.ErrNotFound)
	}
	return k, nil
}

// ListKeys returns a tenant's keys (every tenant's for ""), oldest first.
func (s *Store) ListKeys(ctx context.Context, tenant string) ([]store.Key, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []store.Key
	for _, k := range s.keys {
		if tenant == "" || k.Tenant == tenant {
			out = append(out, k)
		}
	}
	slices.SortFunc(out, func(a, b store.Key) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out, nil
}

// DeleteKey revokes a key.
func (s *Store) DeleteKey(ctx context.Context, tenant, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for h, k := range s.keys {
		if k.ID == id && (tenant == "" || k.Tenant == tenant) {
			delete(s.keys, h)
			return nil
		}
	}
	return fmt.Errorf("api key %s: %w", id, store.ErrNotFound)
}
