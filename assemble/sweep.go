package assemble

import (
	"context"
	"errors"
	"time"

	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/sandbox"
)

// SweepGrace is how long after a session's end the sweep leaves its
// private directory: a session rewound or resumed right after it ended
// uses the directory again, and the sweep must not take it from under a
// command. The process that ends a session removes its own copy at once
// (loop.Env.Ended); the sweep is for the copies other machines keep.
const SweepGrace = 10 * time.Minute

// SweepPrivateDirs removes the private sandbox directories on this
// machine of the sessions log records as ended at least grace ago: the
// directories a server or worker keeps of a session another one took
// over and ended (a failover, a Temporal step run elsewhere), which
// nothing else removes. A directory a process here uses is not looked
// at. A session log does not have keeps its directory: it may be another
// database's on the same machine (so one deleted through another server
// keeps it too).
func (r *Resolver) SweepPrivateDirs(ctx context.Context, log loop.Log, grace time.Duration) ([]string, error) {
	return sandbox.SweepPrivateDirs(r.privateBase(), func(id string) (bool, error) {
		// The directory is held while this asks: a slow database must
		// not keep a resume here waiting for long.
		lctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		events, err := log.Load(lctx, id)
		if errors.Is(err, loop.ErrNotFound) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		st, err := loop.Fold(events)
		if err != nil || len(events) == 0 {
			return false, err
		}
		return st.Status.Finished() && time.Since(events[len(events)-1].Time) >= grace, nil
	})
}

// KeepPrivateDirsSwept sweeps (SweepPrivateDirs, with SweepGrace) at once
// and then every interval until ctx ends, logging what it removed and
// what it could not.
func (r *Resolver) KeepPrivateDirsSwept(ctx context.Context, log loop.Log, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		removed, err := r.SweepPrivateDirs(ctx, log, SweepGrace)
		if len(removed) > 0 {
			r.logger().Info("removed the private sandbox directories of sessions that ended elsewhere", "sessions", len(removed), "dir", r.privateBase())
		}
		if err != nil && ctx.Err() == nil {
			r.logger().Warn("sweeping private sandbox directories: what could not be looked up or removed is tried again at the next sweep", "dir", r.privateBase(), "every", every, "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// privateBase is where this process makes sessions' private directories.
func (r *Resolver) privateBase() string {
	if r.Sandbox != nil && r.Sandbox.Dir != "" {
		return r.Sandbox.Dir
	}
	return sandbox.DefaultPrivateBase()
}
