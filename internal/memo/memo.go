// Package memo keeps values worked out from text, so that the same text
// is worked out once: what every session derives anew from its tools'
// schemas, which are the same from one session to the next.
package memo

import "sync"

// Cache maps keys to the values made from them. It is safe for
// concurrent use; values must not be modified once made, since every
// caller with the same key shares one. The zero value is not usable:
// make one with New.
type Cache[V any] struct {
	mu  sync.Mutex
	m   map[string]V
	max int
}

// New returns a cache holding at most max values. When it is full, a new
// value takes the place of one picked at random: keys that keep changing
// cannot grow it without end, and a set of keys in use a little larger
// than max still mostly hits (emptying it, or dropping the oldest, would
// miss every time for keys used round and round).
func New[V any](max int) *Cache[V] {
	return &Cache[V]{m: map[string]V{}, max: max}
}

// Get returns the value kept for key, or makes it with build and keeps
// it. A value whose making failed is not kept. Two callers missing the
// same key at once may both make it; one of the values is kept.
func (c *Cache[V]) Get(key string, build func() (V, error)) (V, error) {
	c.mu.Lock()
	v, ok := c.m[key]
	c.mu.Unlock()
	if ok {
		return v, nil
	}
	v, err := build()
	if err != nil {
		return v, err
	}
	c.mu.Lock()
	if _, ok := c.m[key]; !ok && len(c.m) >= c.max {
		for k := range c.m { // Go starts a map's range at random
			delete(c.m, k)
			break
		}
	}
	c.m[key] = v
	c.mu.Unlock()
	return v, nil
}

// Len returns how many values the cache holds.
func (c *Cache[V]) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m)
}
