// Package loop is the agent loop: typed events, the state fold, the runner
// that drives a model and its tools, stop conditions and stuck detection.
package loop

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/agentloop/agentloop/model"
	"github.com/agentloop/agentloop/tool"
)

// DefaultMarker is the completion marker of self-reasoning mode.
const DefaultMarker = "TASK_COMPLETE:"

// Recovered is what a text tool-call parser found in a reply.
type Recovered struct {
	Calls     []model.ToolCall
	Content   string
	Format    string
	Attempted bool   // the text looks like a tool call that could not be read
	Problem   string // what was wrong, for the correction request
}

// Policy is how a tool call is approved.
type Policy string

const (
	PolicyAuto Policy = "auto"
	PolicyAsk  Policy = "ask"
	PolicyDeny Policy = "deny"
)

// Config is everything a Runner needs: Log, and either Resolve or Model.
//
// Model, Tools, Gate, Verifier, Approval, Context and SystemPrompt are the
// Env of every session when Resolve is nil — the few lines an embedding
// program needs. With Resolve, each session gets the Env its recorded spec
// resolves to, and those fields are ignored.
type Config struct {
	Model model.Model
	// ModelName is recorded in the log and used for prices, for sessions
	// whose Task names no model.
	ModelName string
	Tools     *tool.Registry
	Log       Log
	// EndBehind lets a session that ends return before its last events
	// are durable: they commit behind the return, as a step's events
	// commit behind the model call after it. Run and Session.Wait then
	// hand back the final state while the log may not hold it yet;
	// Runner.Sync waits until it does and reports a commit that failed.
	// Resume, Reply, Decide, Step and Terminate on such a session wait
	// for that commit first. A crash before it lands
	// loses what a crash during the last step would: the session is
	// recovered from the log and its last model call is made again. So a
	// caller that shows the answer to the world (replies to a client,
	// stores it elsewhere) calls Sync first. Only an AsyncLog commits
	// behind; with another Log, and for terminated sessions, the end is
	// durable before the return as usual. It pays where a commit is a
	// network round trip (PostgreSQL); the service never sets it (a
	// session's lease is let go once its end is durable).
	EndBehind bool
	// Resolve builds each session's Env from its session.started.
	Resolve Resolver

	SystemPrompt string
	Mode         Mode
	// Marker ends a self-reasoning session (default TASK_COMPLETE:).
	Marker string
	Limits Limits
	// Stop adds conditions to the built-in ones (any of them stops).
	Stop StopCondition

	// ParseToolCalls recovers tool calls written in the reply text when
	// the provider returned none. Nil disables recovery.
	ParseToolCalls func(text string, tools []model.ToolSpec) Recovered
	// Price returns the cost of a call; nil means unknown (zero).
	Price func(modelName string, u model.Usage) (usd float64, known bool)
	// EstimateUsage counts tokens when the provider reported none (or only
	// guessed them: Response.UsageEstimated).
	EstimateUsage func(req *model.Request, resp *model.Response) model.Usage
	// Context adds text to the system message of each request, derived
	// from the state (e.g. the plan and its current step).
	Context func(st *State) string
	// Gate decides whether a final answer ends the session (protocols).
	Gate Gate
	// Verifier checks the work when the model says it is done and when a
	// limit ends the session; nil skips verification.
	Verifier Verifier
	// Approval says how a call must be approved; nil approves everything.
	Approval func(t tool.Tool) Policy

	// Checkpoint snapshots the workspace after each iteration that
	// changed files (and once before the first), recorded as
	// workspace.checkpointed; nil takes none.
	Checkpoint Checkpointer

	// OnDelta sees streamed model output as it arrives.
	OnDelta func(sessionID string, d model.Delta)

	Texts Texts
	Clock func() time.Time
	NewID func() string
}

// Runner starts, resumes and controls sessions. One Runner can drive any
// number of sessions at once.
type Runner struct {
	cfg  Config
	mu   sync.Mutex
	live map[string]*Session
	// endingIDs holds the sessions that ended here and whose last events
	// are still committing (under Config.EndBehind); endErrs the commits
	// that failed, for Sync.
	endingIDs   map[string]*ending
	endErrs     []error
	endErrsMore int // failures past maxEndErrs, counted
	// endFailed holds the endings whose commit failed, until the session
	// runs here again, for Wait (at most maxEndErrs).
	endFailed map[string]*ending
}

// New checks the config and returns a Runner.
func New(cfg Config) (*Runner, error) {
	// Without Model or Resolve the runner records and reads sessions
	// (controls, deletes) but runs none: a session it would step ends in
	// ErrNoModel.
	if cfg.Log == nil {
		return nil, errors.New("loop: Config.Log is required (use store/memory for a throwaway log)")
	}
	if cfg.Mode == "" {
		cfg.Mode = ModeTools
	}
	if cfg.Marker == "" {
		cfg.Marker = DefaultMarker
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	if cfg.NewID == nil {
		cfg.NewID = RandomID
	}
	cfg.Texts = cfg.Texts.withDefaults()
	return &Runner{cfg: cfg, live: map[string]*Session{}, endingIDs: map[string]*ending{}, endFailed: map[string]*ending{}}, nil
}

// RandomID returns 16 random hex characters.
func RandomID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Task is what a session is asked to do.
type Task struct {
	Prompt string
	// Messages starts the session from a conversation (system, user,
	// assistant and tool messages) instead of Prompt alone; Prompt, when
	// empty, becomes its last user message. A system message among them
	// replaces Config.SystemPrompt.
	Messages []model.Message
	// ID names the session; empty means a new random ID.
	ID string
	// FreshID says ID was just made by Config.NewID for this task, so no
	// other session can hold it: Start then lets the session's first step
	// begin while session.started commits (it still returns only once the
	// start is durable).
	FreshID   bool
	Workspace string
	Labels    map[string]string
	// Limits override the runner's limits when non-zero.
	Limits *Limits
	// Verify names the verification commands, recorded for resuming; the
	// Verifier in Config runs them.
	Verify []string
	// Endpoint, Approval and Profile are recorded so the session can be
	// resumed the way it was started (see SessionStarted).
	Endpoint, Approval, Profile string
	// Model (PROVIDER/NAME), Mode and SystemPrompt override the runner's
	// when set; Tenant, Protocol and ModelOptions are recorded as given.
	Model        string
	Mode         Mode
	SystemPrompt string
	Tenant       string
	Protocol     string
	ModelOptions *ModelOptions
	// Tools, when set, narrows the tools the spec resolves to these names
	// (a Resolver honours it; the runner's own tools ignore it).
	Tools []string
	// Sandbox and Network ask for a sandbox backend and network policy
	// (a Resolver honours them, and may refuse or narrow them).
	Sandbox, Network string
	// FallbackModels are the models, in order, the session moves to when
	// its model keeps failing with errors a retry cannot fix.
	FallbackModels []string
	// AnswerSchema, when set, is a JSON Schema the final answer must
	// match: the model is told it, a wrong answer is corrected once, and
	// the accepted answer is State.AnswerJSON.
	AnswerSchema json.RawMessage
}

// ErrRunning is returned when resuming a session that is already running here.
var ErrRunning = errors.New("session is already running")

// ErrFinished is returned when resuming or controlling a session that ended.
var ErrFinished = errors.New("session has ended")

// Start records a new session and runs it in the background.
//
// It returns once session.started is durable. With Task.FreshID the
// session's first model call begins while that commit is in flight, as
// later model calls begin while earlier events commit: a start that
// cannot be saved then stops the session before Start reports it.
func (r *Runner) Start(ctx context.Context, task Task) (*Session, error) {
	how := startDurable
	if task.FreshID && task.ID != "" {
		how = startHandedOver
	}
	s, err := r.create(ctx, &task, how)
	if err != nil {
		return nil, err
	}
	if how == startDurable {
		s.launch(ctx)
		return s, nil
	}
	saved := s.c.handOverWatched()
	s.launch(ctx)
	if err := <-saved; err != nil {
		err = fmt.Errorf("session %s: saving its start: %w", s.id, notSaved{err})
		s.cancelWith(err)
		<-s.done
		return nil, err
	}
	return s, nil
}

// Run records a new session and runs it on the caller's goroutine until it
// stops (ends, pauses or waits). Controls still work through
// Runner.Session, Runner.Pause and Runner.Terminate. What it returns is
// durable, unless Config.EndBehind lets an end commit behind the return
// on an AsyncLog (see Sync).
//
// The error is for a session that could not run or be recorded; how the
// session stopped is in the state. A limit ending it (max iterations,
// timeout, a budget) returns err == nil with Status StatusFailed and the
// limit as Reason. For callers who want an error, State.Err makes one of
// any outcome but completed.
func (r *Runner) Run(ctx context.Context, task Task) (*State, error) {
	// Nobody learns of the session before it stops, so its start need
	// not be durable before its first step — unless the caller chose its
	// ID, which may be taken: that is refused before any model call.
	how := startWithFirstStep
	if task.ID != "" {
		how = startDurable
	}
	s, err := r.create(ctx, &task, how)
	if err != nil {
		return nil, err
	}
	s.prepare(ctx)()
	return s.state, s.err
}

// startCommit is how create commits a new session's start.
type startCommit int

const (
	// startDurable: before create returns.
	startDurable startCommit = iota
	// startWithFirstStep: with the first model call's commit, or
	// commitGrace later (Run).
	startWithFirstStep
	// startHandedOver: the caller hands it over at once and watches its
	// outcome (Start, handOverWatched).
	startHandedOver
)

// create records session.started (and a gate's first events) as how says.
func (r *Runner) create(ctx context.Context, task *Task, how startCommit) (*Session, error) {
	if len(task.Messages) > 0 {
		if err := checkMessages(task.Messages); err != nil {
			return nil, err
		}
		if task.Prompt == "" {
			task.Prompt = lastUserText(task.Messages)
		}
	}
	if task.Prompt == "" && len(task.Messages) == 0 {
		return nil, errors.New("loop: the task is empty")
	}
	if len(task.AnswerSchema) > 0 {
		if _, err := CompileAnswerSchema(task.AnswerSchema); err != nil {
			return nil, fmt.Errorf("loop: %w", err)
		}
	}
	id := task.ID
	if id == "" {
		id = r.cfg.NewID()
	} else if err := r.awaitEnd(ctx, id); err != nil {
		// A session of that ID ending here: its end lands first, so the
		// ID is refused as taken rather than conflicting at the commit.
		return nil, err
	}
	limits := r.cfg.Limits
	if task.Limits != nil {
		limits = *task.Limits
	}
	mode := r.cfg.Mode
	if task.Mode != "" {
		mode = task.Mode
	}
	if mode == ModeSingleShot {
		// One call: its reply is the answer, and there is nothing to wrap up.
		off := false
		limits.MaxIterations, limits.WrapUp = 1, &off
	}
	limits.MaxIterations = limits.maxIterations()
	started := &SessionStarted{
		Task: task.Prompt, SystemPrompt: firstSet(task.SystemPrompt, r.cfg.SystemPrompt), Model: firstSet(task.Model, r.cfg.ModelName), Mode: mode,
		Limits: limits, Workspace: task.Workspace, Labels: task.Labels,
		Verify: task.Verify, Messages: task.Messages,
		Endpoint: task.Endpoint, Approval: task.Approval, Profile: task.Profile,
		Tenant: task.Tenant, Protocol: task.Protocol, ModelOptions: task.ModelOptions,
		Tools: task.Tools, Sandbox: task.Sandbox, Network: task.Network,
		FallbackModels: task.FallbackModels, AnswerSchema: task.AnswerSchema,
	}
	started.Marker = r.cfg.Marker // ends a session in any mode
	// The spec resolves before anything is recorded: a session whose model
	// or tools cannot be had here is refused, not left half-started.
	s := r.newSession(id, &State{Header: Header{Status: StatusIdle}})
	env, err := r.resolve(ctx, id, started, specState(id, started, r.cfg.Clock()))
	if err != nil {
		return nil, err
	}
	s.env, s.spec = env, started
	started.Tools = env.Tools.Names()
	if env.Sandbox != "" {
		started.Sandbox, started.Network = env.Sandbox, env.Network
	}
	if started.SystemPrompt == "" {
		started.SystemPrompt = env.SystemPrompt
	}
	if !changesFiles(env.Tools) {
		// Progress is a change in the workspace: without tools that
		// change anything there is none to measure.
		started.Limits.NoProgressAfter = 0
	}
	if started.Mode == ModeTools && len(started.Tools) == 0 && limits.MaxIterations > 1 {
		// Without tools a multi-step session can only reason.
		started.Mode = ModeSelfReasoning
	}
	if err := r.claim(s); err != nil {
		s.closeEnv()
		return nil, err
	}
	s.emit(started)
	if g := s.env.Gate; g != nil {
		for _, p := range g.Start(s.state) {
			s.emit(p)
		}
	}
	switch how {
	case startDurable:
		if err := s.flush(ctx); err != nil {
			r.release(s)
			return nil, err
		}
	case startWithFirstStep:
		if err := s.flushBehind(ctx, true); err != nil {
			r.release(s)
			return nil, err
		}
	case startHandedOver:
		// No timer may hand the start over first: the caller's watch
		// would then see an empty buffer and report a start not yet
		// durable (or failed) as saved.
		s.commitsFor(ctx)
	}
	return s, nil
}

// specState is the state of a session right after started: what a
// resolver sees of a new session.
func specState(id string, started *SessionStarted, at time.Time) *State {
	st := &State{Header: Header{Status: StatusIdle}}
	_ = st.Apply(NewEvent(id, 1, at, started)) // a first session.started always applies
	return st
}

// changesFiles reports whether any tool may change the workspace.
func changesFiles(reg *tool.Registry) bool {
	for _, name := range reg.Names() {
		if t, _ := reg.Lookup(name); tool.EffectOf(t) != tool.EffectRead {
			return true
		}
	}
	return false
}

func firstSet(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}

// Resume continues a stopped session from its log: a paused or waiting
// session is resumed; a running one (left behind by a crash) is recovered.
// Tool calls a crash interrupted are re-run only when the tool is
// idempotent; otherwise the model is told their outcome is unknown.
func (r *Runner) Resume(ctx context.Context, id string, note string) (*Session, error) {
	return r.resume(ctx, id, resumeEvents(id, note))
}

// ErrNotLeftRunning is Recover's answer for a session that was not left
// running: a person paused it, it waits for one, or it ended.
var ErrNotLeftRunning = errors.New("the session was not left running")

// Recover continues a session a stopped process left running (status
// running in its log), as Resume does. One found stopped — paused by a
// person, waiting, ended, perhaps just now by the process that ran it —
// is left as it is, with ErrNotLeftRunning: recovering never undoes a
// stop, which is what a list of running sessions read a moment earlier
// could otherwise make it do.
func (r *Runner) Recover(ctx context.Context, id string) (*Session, error) {
	s, err := r.resume(ctx, id, func(_ *Session, st *State) ([]Payload, error) {
		if st.Status != StatusRunning {
			return nil, fmt.Errorf("session %s is %s: %w", id, st.Status, ErrNotLeftRunning)
		}
		return nil, nil
	})
	if errors.Is(err, ErrFinished) {
		return nil, fmt.Errorf("%w: %w", ErrNotLeftRunning, err)
	}
	return s, err
}

// resumeEvents is what resuming a stopped session records.
func resumeEvents(id, note string) func(s *Session, st *State) ([]Payload, error) {
	return (func(s *Session, st *State) ([]Payload, error) {
		if st.Status == StatusPaused || st.Status == StatusWaiting {
			if len(st.PendingApprovals) > 0 {
				return nil, fmt.Errorf("session %s is waiting for approval of %s (call %s): approve or deny it first", id, st.PendingApprovals[0].Name, st.PendingApprovals[0].CallID)
			}
			return []Payload{&SessionResumed{Note: note}}, nil
		}
		return nil, nil
	})
}

// Reply sends a person's message to a session and resumes it. A waiting
// session gets its answer; a paused one gets the message as guidance.
func (r *Runner) Reply(ctx context.Context, id, text string) (*Session, error) {
	if text == "" {
		return nil, errors.New("loop: the reply is empty")
	}
	return r.resume(ctx, id, replyEvents(ctx, id, text))
}

// replyEvents is what a person's reply to a stopped session records.
func replyEvents(ctx context.Context, id, text string) func(s *Session, st *State) ([]Payload, error) {
	return (func(s *Session, st *State) ([]Payload, error) {
		if st.Status != StatusWaiting && st.Status != StatusPaused {
			return nil, fmt.Errorf("session %s is %s; only a paused or waiting session takes a reply", id, st.Status)
		}
		if len(st.PendingApprovals) > 0 {
			return nil, fmt.Errorf("session %s is waiting for approval of %s, not for a reply: approve or deny it", id, st.PendingApprovals[0].Name)
		}
		out := []Payload{&MessageAdded{Role: model.RoleUser, Content: text, Kind: KindUser}}
		if st.Status == StatusWaiting && st.Reason == ReasonConfirmation {
			if err := s.needEnv(ctx); err != nil {
				return nil, err
			}
		}
		if g := s.envGate(); g != nil && st.Status == StatusWaiting && st.Reason == ReasonConfirmation {
			d := g.Reply(ctx, st, text)
			out = append(out, d.Events...)
			if d.Accept {
				return append(out, &SessionEnded{Status: StatusCompleted, Reason: ReasonCompleted, Answer: st.LastAnswer()}), nil
			}
		}
		return append(out, &SessionResumed{Note: "reply"}), nil
	})
}

// Decision on a tool call waiting for approval.
type ApprovalDecision struct {
	CallID string
	// ArgsHash must be the hash shown with the request: a decision for
	// different arguments is refused.
	ArgsHash    string
	Approved    bool
	Reason      string
	EditedInput []byte
	// ForSession allows the same call (tool and arguments) for the rest
	// of the session, until revoked.
	ForSession bool
	// Revoke ends the allowance of the call whose arguments hash to
	// ArgsHash (CallID is not needed).
	Revoke bool
}

// Decide records a decision on a pending approval and resumes the session
// once nothing else is pending.
func (r *Runner) Decide(ctx context.Context, id string, d ApprovalDecision) (*Session, error) {
	if d.Revoke {
		return r.record(ctx, id, revokeEvents(id, d), false)
	}
	return r.resume(ctx, id, decisionEvents(id, d))
}

// decisionEvents is what a decision on a pending approval records.
func decisionEvents(id string, d ApprovalDecision) func(s *Session, st *State) ([]Payload, error) {
	return (func(s *Session, st *State) ([]Payload, error) {
		var p *PendingApproval
		for i := range st.PendingApprovals {
			if st.PendingApprovals[i].CallID == d.CallID {
				p = &st.PendingApprovals[i]
			}
		}
		if p == nil {
			return nil, fmt.Errorf("session %s has no pending approval for call %q", id, d.CallID)
		}
		if d.ArgsHash != p.ArgsHash {
			return nil, fmt.Errorf("session %s: approval for call %s names arguments %q but the call has %q: the arguments changed; review them again", id, d.CallID, d.ArgsHash, p.ArgsHash)
		}
		dec := &ApprovalDecided{CallID: d.CallID, ArgsHash: d.ArgsHash, Approved: d.Approved, Reason: d.Reason, EditedInput: d.EditedInput}
		if d.ForSession && d.Approved && len(d.EditedInput) == 0 {
			dec.ForSession, dec.Name, dec.Input = true, p.Name, p.Input
		}
		out := []Payload{dec}
		if len(st.PendingApprovals) == 1 {
			out = append(out, &SessionResumed{Note: "approval"})
		}
		return out, nil
	})
}

func (r *Runner) resume(ctx context.Context, id string, prepare func(*Session, *State) ([]Payload, error)) (*Session, error) {
	return r.record(ctx, id, prepare, true)
}

// record records what prepare returns for a stopped session and, when run
// is set and the session is running after it, runs it here.
func (r *Runner) record(ctx context.Context, id string, prepare func(*Session, *State) ([]Payload, error), run bool) (*Session, error) {
	events, err := r.load(ctx, id)
	if err != nil {
		return nil, err
	}
	st, err := Fold(events)
	if err != nil {
		return nil, err
	}
	if st.Status.Finished() {
		return nil, fmt.Errorf("session %s: %w (%s, %s)", id, ErrFinished, st.Status, st.Reason)
	}
	s := r.newSession(id, st)
	s.spec, _ = events[0].Data.(*SessionStarted)
	if err := r.claim(s); err != nil {
		return nil, err
	}
	extra, err := prepare(s, st)
	if err != nil {
		r.release(s)
		return nil, err
	}
	for _, p := range extra {
		if end, ok := p.(*SessionEnded); ok {
			s.endSession(end, "")
			continue
		}
		s.emit(p)
	}
	if err := s.flush(ctx); err != nil {
		r.release(s)
		return nil, err
	}
	// Still waiting (more approvals pending), or recorded for a driver
	// that runs it step by step: nothing to run here.
	now := s.state.Status
	return r.runHere(ctx, s, run && now != StatusWaiting && now != StatusPaused && !now.Finished())
}

// runHere ends the claim on a session whose change was just recorded:
// with run, it runs the session here; without, it releases it with Done
// already closed. A session that cannot get its environment here stays
// recorded and resumable.
func (r *Runner) runHere(ctx context.Context, s *Session, run bool) (*Session, error) {
	if !run {
		r.release(s)
		s.markStopped()
		return s, nil
	}
	if err := s.needEnv(ctx); err != nil {
		r.release(s)
		return nil, err
	}
	s.launch(ctx)
	return s, nil
}

// Session returns the live session with this ID, if it runs here.
func (r *Runner) Session(id string) (*Session, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s, ok := r.live[id]
	return s, ok
}

func (r *Runner) claim(s *Session) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, busy := r.live[s.id]; busy {
		return fmt.Errorf("session %s: %w", s.id, ErrRunning)
	}
	r.live[s.id] = s
	delete(r.endFailed, s.id)
	return nil
}

func (r *Runner) release(s *Session) {
	r.mu.Lock()
	if r.live[s.id] == s {
		delete(r.live, s.id)
	}
	r.mu.Unlock()
	s.closeEnv()
}
