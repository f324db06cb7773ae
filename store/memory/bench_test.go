package memory_test

import (
	"fmt"
	"testing"

	"github.com/agentloop/agentloop/store/memory"
	"github.com/agentloop/agentloop/store/storetest"
)

// BenchmarkAppend is the non-durable baseline for store/sqlite's.
func BenchmarkAppend(b *testing.B) {
	for _, sessions := range []int{1, 100, 1000} {
		b.Run(fmt.Sprintf("%d-sessions", sessions), func(b *testing.B) {
			s := memory.New()
			defer s.Close()
			storetest.BenchAppend(b, s, sessions)
		})
	}
}

func BenchmarkLoad(b *testing.B) {
	s := memory.New()
	defer s.Close()
	storetest.BenchLoad(b, s)
}
