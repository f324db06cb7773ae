package memory

import (
	"context"
	"fmt"
	"sort"

	"github.com/agentloop/agentloop/store"
)

// PutPrompt stores the next version of a prompt.
func (s *Store) PutPrompt(ctx context.Context, p store.Prompt) (store.Prompt, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.prompts == nil {
		s.prompts = map[string][]store.Prompt{}
	}
	key := p.Tenant + "\x00" + p.Name
	p.Version, p.CreatedAt = len(s.prompts[key])+1, s.clock().UTC()
	s.prompts[key] = append(s.prompts[key], p)
	return p, nil
}

// GetPrompt returns a version of a prompt (0: the latest).
func (s *Store) GetPrompt(ctx context.Context, tenant, name string, version int) (store.Prompt, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	vs := s.prompts[tenant+"\x00"+name]
	if version == 0 {
		version = len(vs)
	}
	if version < 1 || version > len(vs) {
		return store.Prompt{}, fmt.Errorf("prompt %s version %d: %w", name, version, store.ErrNotFound)
	}
	return vs[version-1], nil
}

// ListPrompts returns the latest version of each of a tenant's prompts.
func (s *Store) ListPrompts(ctx context.Context, tenant string) ([]store.Prompt, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []store.Prompt
	for _, vs := range s.prompts {
		if len(vs) > 0 && vs[0].Tenant == tenant {
			out = append(out, vs[len(vs)-1])
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}
