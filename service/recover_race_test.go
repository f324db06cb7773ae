package service_test

import (
	"context"
	"testing"

	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/store"
	"github.com/agentloop/agentloop/store/memory"
)

// staleList is a store whose list still shows every session running, as
// a list read a moment before a session paused does.
type staleList struct{ *memory.Store }

func (s staleList) List(ctx context.Context, f store.Filter) ([]loop.Summary, error) {
	all, err := s.Store.List(ctx, store.Filter{})
	for i := range all {
		all[i].Status = loop.StatusRunning
	}
	return all, err
}

// A session a person paused stays paused when a recovery lists it as
// running: recovering never undoes a stop.
func TestRecoverLeavesASessionPausedMeanwhile(t *testing.T) {
	st := staleList{memory.New()}
	svc := newService(t, st, pausing, "")
	id := pausedSession(t, svc)
	got, err := svc.Recover(t.Context(), acme(all...))
	if err != nil || len(got) != 0 {
		t.Fatalf("recover: %d sessions (%v), want none", len(got), err)
	}
	if s, err := svc.Get(t.Context(), acme(all...), id); err != nil || s.Status != loop.StatusPaused {
		t.Fatalf("the session is %v (%v) after the recovery, want it still paused", s.Status, err)
	}
}
