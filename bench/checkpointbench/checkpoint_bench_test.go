// Package checkpointbench measures what workspace checkpoints cost per
// step: a 1,000-file workspace (about 4 MB) in which each step rewrites
// 10 files, snapshotted after every step, with the time per step and the
// shadow repository's growth per step.
//
//	AGENTLOOP_BENCH=1 go test ./bench/checkpointbench -run TestCheckpointCost -v
//	go test ./bench/checkpointbench -run '^$' -bench . -benchtime 50x
package checkpointbench

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentloop/agentloop/checkpoint"
)

const (
	files        = 1000
	changedFiles = 10
)

// workspace writes files files of about 4 KB in 20 directories.
func workspace(t testing.TB) string {
	ws := t.TempDir()
	line := strings.Repeat("x", 63) + "\n"
	for i := range files {
		p := filepath.Join(ws, fmt.Sprintf("pkg%02d", i%20), fmt.Sprintf("file%04d.go", i))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(fmt.Sprintf("// file %d\n%s", i, strings.Repeat(line, 64))), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return ws
}

// step rewrites changedFiles files, as a step's edits would.
func step(t testing.TB, ws string, n int) {
	for j := range changedFiles {
		i := (n*changedFiles + j) % files
		p := filepath.Join(ws, fmt.Sprintf("pkg%02d", i%20), fmt.Sprintf("file%04d.go", i))
		if err := os.WriteFile(p, []byte(fmt.Sprintf("// file %d, step %d\n", i, n)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func diskUsage(t testing.TB, dir string) int64 {
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err == nil {
			n += info.Size()
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestCheckpointCost prints the first snapshot's cost and the p50 and p99
// time and mean disk growth of 50 steps' snapshots; it asserts only that
// every snapshot was taken.
func TestCheckpointCost(t *testing.T) {
	if os.Getenv("AGENTLOOP_BENCH") != "1" {
		t.Skip("a measurement, not a test: AGENTLOOP_BENCH=1 go test -run TestCheckpointCost -v ./bench/checkpointbench")
	}
	ctx := t.Context()
	ws := workspace(t)
	s := &checkpoint.Store{Root: t.TempDir()}
	start := time.Now()
	if _, err := s.Save(ctx, "bench", ws, "0"); err != nil {
		t.Fatal(err)
	}
	first, firstDisk := time.Since(start), diskUsage(t, s.Root)
	const steps = 50
	var times []time.Duration
	for n := 1; n <= steps; n++ {
		step(t, ws, n)
		start := time.Now()
		if _, err := s.Save(ctx, "bench", ws, fmt.Sprint(n)); err != nil {
			t.Fatal(err)
		}
		times = append(times, time.Since(start))
	}
	slices.Sort(times)
	growth := (diskUsage(t, s.Root) - firstDisk) / steps
	t.Logf("workspace: %d files, %d KB; each step rewrites %d files", files, diskUsage(t, ws)>>10, changedFiles)
	t.Logf("first snapshot: %v, shadow repository %d KB", first.Round(time.Millisecond), firstDisk>>10)
	t.Logf("per step (%d steps): p50 %v, p99 %v, disk +%d KB", steps, times[steps/2].Round(100*time.Microsecond), times[steps*99/100].Round(100*time.Microsecond), growth>>10)
}

// BenchmarkCheckpointStep is one step's snapshot of the 1,000-file
// workspace; it reports the shadow repository's growth per step.
func BenchmarkCheckpointStep(b *testing.B) {
	ctx := b.Context()
	ws := workspace(b)
	s := &checkpoint.Store{Root: b.TempDir()}
	if _, err := s.Save(ctx, "bench", ws, "0"); err != nil {
		b.Fatal(err)
	}
	before := diskUsage(b, s.Root)
	b.ResetTimer()
	for n := range b.N {
		b.StopTimer()
		step(b, ws, n+1)
		b.StartTimer()
		if _, err := s.Save(ctx, "bench", ws, fmt.Sprint(n)); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(diskUsage(b, s.Root)-before)/float64(b.N)/1024, "KB/step")
}
