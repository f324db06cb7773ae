package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentloop/agentloop/loop"
)

// Recover continues every session a stopped process left running: each is
// rebuilt from its log and resumed by r (tool calls that were interrupted
// are re-run only when their tool is idempotent). Paused and waiting
// sessions stay as they are: a person resumes them. A session whose lease
// has not expired belongs to a live process and is left to it (package
// service recovers with leases of its own; this is for a bare runner).
func Recover(ctx context.Context, s Store, r *loop.Runner) ([]*loop.Session, error) {
	list, err := s.List(ctx, Filter{Status: []loop.Status{loop.StatusRunning}})
	if err != nil {
		return nil, fmt.Errorf("recover: listing unfinished sessions: %w", err)
	}
	leases, err := s.LeasesOf(ctx)
	if err != nil {
		return nil, fmt.Errorf("recover: reading leases: %w", err)
	}
	out := make([]*loop.Session, 0, len(list))
	for _, sum := range list {
		if l, ok := leases[sum.ID]; ok && l.Expires.After(time.Now()) {
			continue
		}
		sess, err := r.Recover(ctx, sum.ID)
		if errors.Is(err, loop.ErrNotLeftRunning) {
			continue // it stopped since the list was read
		}
		if err != nil {
			return out, fmt.Errorf("recover session %s: %w", sum.ID, err)
		}
		out = append(out, sess)
	}
	return out, nil
}
