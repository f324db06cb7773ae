package memory

import (
	"context"
	"fmt"

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
