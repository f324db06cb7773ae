package sqlite

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentloop/agentloop/store/storetest"
)

// stopCheckpointLoop stops the checkpointer's background loop, so that a
// test runs every checkpoint itself; Close still closes its connection.
func stopCheckpointLoop(c *checkpointer) {
	close(c.stop)
	<-c.done
	c.stop = make(chan struct{})
}

// A checkpoint of a WAL of restartFrames or more makes the next commit
// start the WAL over even when its PASSIVE pass could not copy every frame
// (commits landed or a reader held a snapshot meanwhile — under a steady
// stream of commits, always): without the RESTART pass the WAL would only
// grow for as long as the store is open. Driven step by step here: a
// reader's snapshot keeps the PASSIVE pass from copying the last commit,
// and the reader ends between the passes.
func TestCheckpointStartsTheWALOver(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "wal.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c := s.ckpt
	stopCheckpointLoop(c)
	var pageSize int64
	if err := c.conn.QueryRowContext(ctx, "PRAGMA page_size").Scan(&pageSize); err != nil {
		t.Fatal(err)
	}
	walFrames := func() int64 {
		fi, err := os.Stat(path + "-wal")
		if err != nil {
			t.Fatal(err)
		}
		return (fi.Size() - 32) / (24 + pageSize) // a header, then frames
	}
	appendSession := func(id string) {
		t.Helper()
		if err := s.Append(ctx, storetest.FakeEvents(id, 1, 10)...); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; walFrames() < restartFrames; i++ {
		appendSession(fmt.Sprintf("grow-%d", i))
	}
	reader, err := s.rdb.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	var n int
	if _, err := reader.ExecContext(ctx, "BEGIN"); err != nil {
		t.Fatal(err)
	}
	if err := reader.QueryRowContext(ctx, "SELECT count(*) FROM event_batches").Scan(&n); err != nil {
		t.Fatal(err)
	}
	appendSession("late") // beyond the reader's snapshot: PASSIVE leaves it
	grown := walFrames()
	ended := false
	c.betweenPasses = func() {
		if _, err := reader.ExecContext(ctx, "COMMIT"); err != nil {
			t.Error(err)
		}
		ended = true
	}
	if err := c.checkpoint(); err != nil {
		t.Fatal(err)
	}
	if !ended {
		t.Fatalf("a WAL of %d frames (at least %d) was checkpointed without a RESTART pass", grown, restartFrames)
	}
	appendSession("after")
	frames, err := c.run1("PASSIVE")
	if err != nil {
		t.Fatal(err)
	}
	if frames >= restartFrames {
		t.Fatalf("the WAL holds %d frames after a checkpoint of %d and one commit: it was not started over", frames, grown)
	}
	if size := walFrames(); size > grown {
		t.Fatalf("the WAL file grew from %d to %d frames after it was checkpointed: it was not started over", grown, size)
	}
	for _, id := range []string{"late", "after"} {
		if evs, err := s.Load(ctx, id); err != nil || len(evs) != 10 {
			t.Fatalf("session %s after the checkpoint: %d events (%v), want 10", id, len(evs), err)
		}
	}
}
