package checkpointbench

import (
	"fmt"
	"testing"

	"github.com/agentloop/agentloop/checkpoint"
)

// rewound is the 1,000-file workspace after 8 steps of 10 rewritten
// files each, snapshotted after every step, and the checkpoints of steps
// 3 and 8.
func rewound(b *testing.B) (s *checkpoint.Store, ws, at3, at8 string) {
	ctx := b.Context()
	ws = workspace(b)
	s = &checkpoint.Store{Root: b.TempDir()}
	for n := 0; n <= 8; n++ {
		if n > 0 {
			step(b, ws, n)
		}
		id, err := s.Save(ctx, "bench", ws, fmt.Sprint(n))
		if err != nil {
			b.Fatal(err)
		}
		switch n {
		case 3:
			at3 = id
		case 8:
			at8 = id
		}
	}
	return s, ws, at3, at8
}

// BenchmarkRewindDryRun is a rewind's dry run on the 1,000-file
// workspace: what restoring step 3 changes (50 files) as it is at step 8.
func BenchmarkRewindDryRun(b *testing.B) {
	s, ws, at3, _ := rewound(b)
	b.ResetTimer()
	for range b.N {
		ch, err := s.Changes(b.Context(), "bench", at3, ws)
		if err != nil || len(ch) != 50 {
			b.Fatalf("%d changes, %v", len(ch), err)
		}
	}
}

// BenchmarkRewindRestore restores the 1,000-file workspace to step 3 and
// back to step 8 (50 files each way); each restore counts once.
func BenchmarkRewindRestore(b *testing.B) {
	s, ws, at3, at8 := rewound(b)
	b.ResetTimer()
	for i := range b.N {
		to := at3
		if i%2 == 1 {
			to = at8
		}
		ch, err := s.Restore(b.Context(), "bench", to, ws)
		if err != nil || len(ch) != 50 {
			b.Fatalf("%d changes, %v", len(ch), err)
		}
	}
}
