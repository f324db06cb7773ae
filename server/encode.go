package server

import (
	"encoding/json"
	"strconv"
	"sync"

	"github.com/agentloop/agentloop/loop"
)

// encodings caches the JSON of recent events, so an event followed by
// many readers is encoded once, not once per reader. Events never change
// once recorded, so a cached encoding is always right.
type encodings struct {
	mu   sync.Mutex
	byID map[string][]byte
	ring []string // insertion order, for eviction
	next int
}

const encodingsKept = 4096

func (c *encodings) encode(ev loop.Event) ([]byte, error) {
	key := ev.SessionID + "/" + strconv.FormatInt(ev.Seq, 10)
	c.mu.Lock()
	if b, ok := c.byID[key]; ok {
		c.mu.Unlock()
		return b, nil
	}
	c.mu.Unlock()
	b, err := json.Marshal(ev)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byID == nil {
		c.byID, c.ring = map[string][]byte{}, make([]string, encodingsKept)
	}
	if old := c.ring[c.next]; old != "" {
		delete(c.byID, old)
	}
	c.ring[c.next] = key
	c.next = (c.next + 1) % encodingsKept
	c.byID[key] = b
	return b, nil
}
