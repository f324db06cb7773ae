package filelock_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/agentloop/agentloop/internal/filelock"
)

// Shared holders hold together; an exclusive one waits for them all, and
// the next holder waits for it.
func TestExclusiveWaitsForEveryHolder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lock")
	unlockA, err := filelock.Lock(path, false)
	if err != nil {
		t.Fatal(err)
	}
	unlockB, err := filelock.Lock(path, false) // with A: does not wait
	if err != nil {
		t.Fatal(err)
	}
	took := make(chan func())
	go func() {
		unlock, err := filelock.Lock(path, true)
		if err != nil {
			t.Error(err)
		}
		took <- unlock
	}()
	unlockA()
	select {
	case <-took:
		t.Fatal("the exclusive lock was taken while a shared holder held it")
	case <-time.After(50 * time.Millisecond): // it waits: no holder let go
	}
	unlockB()
	unlockX := <-took
	shared := make(chan func())
	go func() {
		unlock, _ := filelock.Lock(path, false)
		shared <- unlock
	}()
	select {
	case <-shared:
		t.Fatal("a shared lock was taken while the exclusive holder held it")
	case <-time.After(50 * time.Millisecond):
	}
	unlockX()
	(<-shared)()
}
