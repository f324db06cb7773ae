package service

import (
	"context"
	"errors"
	"time"

	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/store"
)

// quotaLockTTL bounds how long a holder that died keeps a tenant's quota
// lock: the next caller takes it over after this.
const quotaLockTTL = 10 * time.Second

// LockTenant takes the tenant's quota lock, a lease in the store that
// every server sharing it respects, and returns its release. While it is
// held, counting the tenant's running sessions and starting (or resuming)
// one are a single step: two requests cannot both see room for one more.
// It waits while another caller holds the lock, until ctx ends.
func (s *Service) LockTenant(ctx context.Context, tenant string) (unlock func(), err error) {
	id, owner := "quota:"+tenant, "quota-"+loop.RandomID()
	for {
		l, err := s.st.Acquire(ctx, id, owner, quotaLockTTL)
		if err == nil {
			return func() { s.st.Release(context.WithoutCancel(ctx), l) }, nil
		}
		if !errors.Is(err, store.ErrLeaseHeld) {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
}
