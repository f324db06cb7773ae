package service

import (
	"context"

	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/store"
)

// WatchSummaries streams the caller's sessions as one-line summaries for a
// dashboard: first the newest ones (up to first, oldest of them first),
// then a session again whenever events of it are committed. The channel
// closes when ctx ends. The store's writer is never blocked: when more
// than 1024 commits wait for this reader, the ones that do not fit are
// dropped and a zero Summary says so (list again).
func (s *Service) WatchSummaries(ctx context.Context, c Caller, first int) (<-chan loop.Summary, error) {
	if err := c.need(ScopeRead); err != nil {
		return nil, err
	}
	f := store.Filter{Limit: first}
	if !c.has(ScopeAllTenants) {
		f.Tenant = c.Tenant
	}
	notices := make(chan store.Notice, 1024)
	lagged := make(chan struct{}, 1)
	stop := s.st.Watch(func(n store.Notice) {
		select {
		case notices <- n:
		default: // never block the writer: the reader is told it lagged
			select {
			case lagged <- struct{}{}:
			default:
			}
		}
	})
	list, err := s.st.List(ctx, f)
	if err != nil {
		stop()
		return nil, err
	}
	out := make(chan loop.Summary, 64)
	go func() {
		defer close(out)
		defer stop()
		known := map[string]*loop.Summary{}
		send := func(sum loop.Summary) bool {
			select {
			case out <- sum:
				return true
			case <-ctx.Done():
				return false
			}
		}
		for i := len(list) - 1; i >= 0; i-- {
			sum := list[i]
			known[sum.ID] = &sum
			if !send(sum) {
				return
			}
		}
		for {
			select {
			case <-ctx.Done():
				return
			case <-lagged:
				if !send(loop.Summary{}) {
					return
				}
			case n := <-notices:
				sum := known[n.SessionID]
				if sum == nil {
					if _, _, err := s.load(ctx, c, n.SessionID); err != nil {
						continue // not the caller's, or gone
					}
					evs, err := s.st.LoadAfter(ctx, n.SessionID, 0)
					if err != nil {
						continue
					}
					sum = &loop.Summary{}
					for _, e := range evs {
						sum.Apply(e)
					}
					known[n.SessionID] = sum
				} else {
					evs := n.Events
					if evs == nil {
						var err error
						if evs, err = s.st.LoadAfter(ctx, n.SessionID, sum.LastSeq); err != nil {
							continue
						}
					}
					for _, e := range evs {
						if e.Seq > sum.LastSeq {
							sum.Apply(e)
						}
					}
				}
				if !c.sees(sum.Tenant) {
					continue
				}
				if !send(*sum) {
					return
				}
			}
		}
	}()
	return out, nil
}
