package loop

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/agentloop/agentloop/model"
)

// Session is a handle on a session running in this process.
type Session struct {
	r  *Runner
	id string
	// spec is what session.started recorded; env what it resolved to
	// here (nil until the session needs to run).
	spec  *SessionStarted
	env   *Env
	state *State // owned by the session goroutine until done is closed
	stop  StopCondition
	// c takes the session's events to its log.
	c      commits
	cready bool
	// runsToStop: the session runs to its stop here (prepare), so its end
	// may commit behind its return (see finish).
	runsToStop bool
	// ending is its end committing behind its return (endBehind), set
	// before done closes.
	ending *ending

	mu        sync.Mutex
	guidance  []string
	revoked   []ApprovalRevoked // allowances a person revoked while it ran
	pauseReq  string
	termReq   string
	terminate bool
	cancel    context.CancelCauseFunc

	// calls is the context its tool calls run in (toolCallsIn), owned by
	// the session goroutine.
	calls *toolCalls

	// calling is the iteration of the model call running or last made
	// (see Calling).
	calling atomic.Int64

	done chan struct{}
	err  error
	// afterStop are the functions AfterStop was given, run once done is
	// closed; stopped says they ran (both under mu).
	afterStop []func()
	stopped   bool
}

var errTerminated = errors.New("session terminated")

// ErrShutdown, as the cause of cancelling a session's context
// (context.WithCancelCause), pauses it with reason shutdown instead of
// interrupted: a server that stops pauses its sessions this way and
// resumes them when it starts again.
var ErrShutdown = errors.New("the server shut down")

func (r *Runner) newSession(id string, st *State) *Session {
	return &Session{r: r, id: id, state: st, done: make(chan struct{})}
}

// ID is the session's ID.
func (s *Session) ID() string { return s.id }

// Done is closed when the session stops running here (ended, paused or waiting).
func (s *Session) Done() <-chan struct{} { return s.done }

// Calling returns the iteration (step) whose model call is running, or
// the last one made; zero before the first. Config.OnDelta's output
// belongs to it, while the events of that step may not be durable yet.
// Safe to call from any goroutine.
func (s *Session) Calling() int { return int(s.calling.Load()) }

// AfterStop runs fn once the session stops running here (ended, paused
// or waiting), right after Done is closed, on the goroutine that ran it
// (at once on the caller's when it stopped already): what a goroutine
// waiting on Done would do, without one per session. Nothing of the
// session waits for fn.
func (s *Session) AfterStop(fn func()) {
	s.mu.Lock()
	if !s.stopped {
		s.afterStop = append(s.afterStop, fn)
		s.mu.Unlock()
		return
	}
	s.mu.Unlock()
	fn()
}

// markStopped closes Done and runs what AfterStop was given.
func (s *Session) markStopped() {
	close(s.done)
	s.mu.Lock()
	fns := s.afterStop
	s.afterStop, s.stopped = nil, true
	s.mu.Unlock()
	for _, fn := range fns {
		fn()
	}
}

// Wait blocks until the session stops running and returns its final state.
// The state must not be modified. The end of a session that ended may
// still be committing (under Config.EndBehind): Runner.Wait waits for it
// (Runner.Sync for every session's).
func (s *Session) Wait(ctx context.Context) (*State, error) {
	select {
	case <-s.done:
		return s.state, s.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Pause asks the session to pause at its next safe point (between
// iterations). The log records session.paused when it takes effect.
func (s *Session) Pause(note string) {
	s.mu.Lock()
	if note == "" {
		note = "paused by user"
	}
	s.pauseReq = note
	s.mu.Unlock()
}

// Terminate ends the session at once: in-flight model and tool calls are
// cancelled through their context. Reason is free text or one of
// completed_by_user, failed, different_approach, stuck.
func (s *Session) Terminate(reason string) {
	s.mu.Lock()
	s.terminate = true
	if reason == "" {
		reason = "terminated by user"
	}
	s.termReq = reason
	cancel := s.cancel
	s.mu.Unlock()
	if cancel != nil {
		cancel(errTerminated)
	}
}

// cancelWith cancels the running session with cause: it pauses as interrupted,
// unless it can no longer record anything (as when its start was not
// saved).
func (s *Session) cancelWith(cause error) {
	s.mu.Lock()
	cancel := s.cancel
	s.mu.Unlock()
	if cancel != nil {
		cancel(cause)
	}
}

// Guide gives a running session a person's message: the model sees it
// from its next call on (it is recorded at the next iteration boundary).
func (s *Session) Guide(text string) {
	s.mu.Lock()
	s.guidance = append(s.guidance, text)
	s.mu.Unlock()
}

// takeGuidance returns the messages Guide collected and forgets them.
func (s *Session) takeGuidance() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.guidance
	s.guidance = nil
	return g
}

func (s *Session) pauseRequested() (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pauseReq, s.pauseReq != ""
}

func (s *Session) terminateRequested() (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.termReq, s.terminate
}

// emit applies an event to the state and buffers it for the log.
func (s *Session) emit(p Payload) {
	switch p.(type) {
	case *SessionEnded, *SessionPaused, *SessionWaiting:
		// A person's message given while the session ran is recorded
		// before it stops, whatever stops it: it is never lost.
		for _, text := range s.takeGuidance() {
			s.emit(&MessageAdded{Role: model.RoleUser, Content: text, Kind: KindUser})
		}
		for _, p := range s.takeRevoked() {
			s.emit(p) // so is an allowance a person revoked
		}
	}
	e := NewEvent(s.id, s.state.Seq+1, s.r.cfg.Clock(), p)
	if err := s.state.Apply(e); err != nil {
		// Only a bug in the runner can get here: the runner numbers its own events.
		panic(fmt.Sprintf("loop: applying own event: %v", err))
	}
	s.c.add(e)
	s.checkpointAfter(p)
}

// flush makes buffered events durable, after every commit already in
// flight. Watchers read them from the store (store.Watch, package feed),
// never from the runner. Appends are not cancelled by termination: what
// happened is recorded.
func (s *Session) flush(ctx context.Context) error {
	s.commitsFor(ctx)
	return s.c.flush()
}

// flushBehind commits buffered events behind the session's next steps
// when the log can (AsyncLog), else now; see commits.behind.
func (s *Session) flushBehind(ctx context.Context, briefly bool) error {
	s.commitsFor(ctx)
	return s.c.behind(briefly)
}

// waitPending waits for every commit in flight.
func (s *Session) waitPending() error {
	if !s.cready {
		return nil
	}
	return s.c.waitPending()
}

// commitsFor readies the session's commits on first use: they record what
// happened under ctx's values, without its cancellation.
func (s *Session) commitsFor(ctx context.Context) {
	if !s.cready {
		s.c.init(s.id, s.r.cfg.Log, ctx)
		s.cready = true
	}
}

func (s *Session) launch(ctx context.Context) {
	run := s.prepare(ctx)
	go run()
}

// prepare readies the session to run and returns the function that runs
// it to its stop; launch runs it on a new goroutine, Runner.Run on the
// caller's.
func (s *Session) prepare(ctx context.Context) func() {
	runCtx, cancel := context.WithCancelCause(ctx)
	s.mu.Lock()
	s.cancel = cancel
	terminated := s.terminate
	s.mu.Unlock()
	if terminated {
		cancel(errTerminated)
	}
	s.setStopConditions()
	s.runsToStop = true
	return func() {
		defer s.markStopped()
		defer s.r.release(s)
		defer cancel(nil)
		s.err = s.run(runCtx)
		s.c.close()
	}
}

// Pause asks a session running here to pause.
func (r *Runner) Pause(id, note string) error {
	s, ok := r.Session(id)
	if !ok {
		return fmt.Errorf("session %s is not running in this process", id)
	}
	s.Pause(note)
	return nil
}

// Terminate ends a session: at once when it runs here, or by recording
// its end in the log when it is paused, waiting or left by a crash.
func (r *Runner) Terminate(ctx context.Context, id, reason string) (*State, error) {
	if s, ok := r.Session(id); ok {
		s.Terminate(reason)
		return s.Wait(ctx)
	}
	events, err := r.load(ctx, id)
	if err != nil {
		return nil, err
	}
	st, err := Fold(events)
	if err != nil {
		return nil, err
	}
	if st.Status.Finished() {
		return nil, fmt.Errorf("session %s: %w (%s)", id, ErrFinished, st.Status)
	}
	s := r.newSession(id, st)
	if err := r.claim(s); err != nil {
		return nil, err
	}
	defer r.release(s)
	s.termReq, s.terminate = reason, true
	if reason == "" {
		s.termReq = "terminated by user"
	}
	err = s.endTerminated(ctx)
	s.markStopped()
	return s.state, err
}

// setStopConditions sets the session's stop conditions: its limits', and
// the runner's own.
func (s *Session) setStopConditions() {
	s.stop = builtinConditions(s.state.Limits)
	if s.r.cfg.Stop != nil {
		s.stop = AnyOf(s.stop, s.r.cfg.Stop)
	}
}
