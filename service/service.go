// Package service is the control API every front end calls: the CLI in
// process, the HTTP server over the network, workers. It starts, lists,
// watches and controls sessions for a Caller (tenant, subject, scopes)
// and returns typed errors (ErrNotFound, ErrConflict, ErrInvalid,
// ErrForbidden) that a transport maps to its own codes.
//
// Ownership. A session runs in at most one process at a time: the one
// holding its store lease. Every append that process makes is fenced by
// the lease's token, so a process that lost the lease (it stalled past
// the lease's expiry and another took over) can record nothing more. The
// owner renews its leases while it runs them and gives them up when the
// session stops (ends, pauses or waits).
//
// Controls. A control for a session this process runs takes effect here
// directly. A control for a session no process runs is applied by the
// caller's process, which takes the lease to do it (and then runs the
// session if the control resumes it). A control for a session another
// process runs is stored as a durable request (store.Control); the owner
// finds it within PollInterval and honours it at the session's next safe
// point — pause between iterations, terminate at once, a reply as the
// model's next message — and records the outcome on the request.
package service

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/agentloop/agentloop/checkpoint"
	"github.com/agentloop/agentloop/feed"
	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/store"
)

// Config is what New needs. Store is required, and Runner's Resolve (or
// Model): the service runs sessions with it.
type Config struct {
	Store store.Store
	// Runner is the runner's wiring (see package assemble); its Log is
	// replaced by the service's lease-fenced view of Store.
	Runner loop.Config
	// Feed replays and follows sessions' events; nil makes one on Store.
	Feed *feed.Feed
	// Owner names this process in leases (default host:pid:random).
	Owner string
	// LeaseTTL is how long a lease lasts unrenewed (default 30 s): how
	// long a crashed owner's sessions wait before another process may
	// recover them.
	LeaseTTL time.Duration
	// PollInterval is how often the service looks for controls that
	// other processes stored for sessions it runs (default 250 ms).
	PollInterval time.Duration
	// TakeOverControls makes this process apply the controls stored for
	// a session whose owner let it go before honouring them (a resume
	// sent through another server just as the session paused), taking
	// the session's lease: set it for servers, which run sessions for
	// others. Without it such a control waits for its requester
	// (WaitControl) — which an HTTP client is not. Ignored with an Engine,
	// which drives the sessions.
	TakeOverControls bool
	// Clock is the time source for waiting (default time.Now).
	Clock func() time.Time
	// OnFailed, when set, hears of a session that stopped here without
	// reaching a stop it could record (its events could not be saved: the
	// database went away). Its lease is let go, so the session is
	// recovered — here or by another process — once the database is back.
	OnFailed func(id string, err error)
	// Context is what sessions run under here, whoever started them (an
	// HTTP request ends long before its session): cancel it to stop them —
	// with cause loop.ErrShutdown they pause with reason shutdown, else
	// interrupted. Default: never cancelled.
	Context context.Context
	// Engine, when set, drives the sessions (see Engine): this process
	// records them and passes controls on, and runs none itself.
	Engine Engine
	// Checkpoints holds sessions' workspace snapshots, for Fork; nil:
	// sessions cannot be forked here.
	Checkpoints *checkpoint.Store
	// PrivateDirs is where this machine keeps sessions' private sandbox
	// directories (sandbox.DefaultPrivateBase, as assemble makes them): a
	// session this service deletes, or ends without running it (a
	// terminate while it is paused or waiting), loses its own. One that
	// ends running here lost it then (loop.Env.Ended). Empty: none is
	// removed here.
	PrivateDirs string
}

// Service is the control API over one store and one runner.
type Service struct {
	cfg    Config
	st     store.Store
	runner *loop.Runner
	feed   *feed.Feed
	log    *fencedLog

	stopFeed func()
	cancel   context.CancelFunc
	bg       sync.WaitGroup
	// running counts the sessions running here.
	running sync.WaitGroup
	// letting holds, per session running here, a channel closed once it
	// stopped and its lease was given up (see keepWhileRunning).
	letMu   sync.Mutex
	letting map[string]chan struct{}
}

// New starts the service: its runner, lease renewals and the control
// poller. Close stops them.
func New(cfg Config) (*Service, error) {
	if cfg.Store == nil {
		return nil, errors.New("service: Config.Store is required")
	}
	if cfg.Owner == "" {
		host, _ := os.Hostname()
		cfg.Owner = fmt.Sprintf("%s:%d:%s", host, os.Getpid(), loop.RandomID()[:6])
	}
	if cfg.LeaseTTL <= 0 {
		cfg.LeaseTTL = 30 * time.Second
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = 250 * time.Millisecond
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	if cfg.Context == nil {
		cfg.Context = context.Background()
	}
	s := &Service{cfg: cfg, st: cfg.Store, feed: cfg.Feed}
	if s.feed == nil {
		s.feed = feed.New(cfg.Store)
		s.stopFeed = cfg.Store.Watch(s.feed.Publish)
	}
	s.log = newFencedLog(cfg.Store)
	rc := cfg.Runner
	rc.Log = s.log.asLog()
	// A session's lease is given up once it stops running here: its end
	// must be durable by then, under the token, so it never commits
	// behind the return.
	rc.EndBehind = false
	if rc.NewID == nil {
		rc.NewID = loop.RandomID
	}
	s.cfg.Runner.NewID = rc.NewID
	r, err := loop.New(rc)
	if err != nil {
		if s.stopFeed != nil {
			s.stopFeed()
		}
		return nil, err
	}
	s.runner = r
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	s.bg.Add(2)
	go func() { defer s.bg.Done(); s.renewLeases(ctx) }()
	go func() { defer s.bg.Done(); s.pollControls(ctx) }()
	return s, nil
}

// sessionContext is the context sessions run under here.
func (s *Service) sessionContext() context.Context { return s.cfg.Context }

// Wait blocks until no session runs here any more (after Config.Context
// was cancelled, they pause at once), or ctx ends.
func (s *Service) Wait(ctx context.Context) error {
	done := make(chan struct{})
	go func() { s.running.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Feed is the service's event feed (for readers in this process).
func (s *Service) Feed() *feed.Feed { return s.feed }

// Owner is the name this process holds leases under.
func (s *Service) Owner() string { return s.cfg.Owner }

// Close stops renewals and polling and gives up the leases of sessions no
// longer running here. Sessions still running keep their leases until
// they expire: stop them first (cancel their context) for a clean handover.
func (s *Service) Close() error {
	s.cancel()
	s.bg.Wait()
	s.log.releaseAll(s.st)
	if s.stopFeed != nil {
		s.stopFeed()
	}
	return nil
}
