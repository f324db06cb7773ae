package memory_test

import (
	"testing"
	"time"

	"github.com/agentloop/agentloop/store"
	"github.com/agentloop/agentloop/store/memory"
	"github.com/agentloop/agentloop/store/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Suite{
		Open:          func(t *testing.T) store.Store { return memory.New() },
		OpenWithClock: func(t *testing.T, now func() time.Time) store.Store { return memory.New(memory.WithClock(now)) },
	}.Run(t)
}
