package loop

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/agentloop/agentloop/model"
)

// Rewinding. A person may take a stopped session back to the end of an
// earlier step k and go on from there: session.rewound is appended to the
// log (nothing is deleted). The steps after k stay in the log and in the
// state's Iterations, marked rewound, for audit; everything the session
// goes on from — the conversation the model sees, the plan, the memory,
// the counters the limits and budgets read, the pending turn, the current
// step — is as it was when step k ended. The fold keeps, for every step
// that ended on the live line, a restore point holding exactly that, so
// Apply rewinds from the state alone: a snapshot, a recovered session, a
// stepwise driver and a watcher that folds event by event all agree.

// TypeSessionRewound records that a session was taken back to the end of
// an earlier step.
const TypeSessionRewound EventType = "session.rewound"

// ReasonRewound: the session was rewound and waits to be resumed.
const ReasonRewound StopReason = "rewound"

// SessionRewound takes the session back to the end of step ToIteration.
// The workspace was restored from checkpoint Checkpoint (taken at the end
// of step CheckpointIteration, the last at or before ToIteration). After
// it the session is paused (reason rewound); a resume in the same commit
// carries on from there, with Message, when given, as the person's
// message that follows it (recorded as message.added too: that is what
// the model reads).
type SessionRewound struct {
	ToIteration         int    `json:"to_iteration"`
	Checkpoint          string `json:"checkpoint,omitempty"`
	CheckpointIteration int    `json:"checkpoint_iteration"`
	Message             string `json:"message,omitempty"`
}

func (*SessionRewound) EventType() EventType { return TypeSessionRewound }

// ErrNotStopped is returned (wrapped) for a rewind of a session that is
// running or waiting: only an ended or paused one can be rewound.
var ErrNotStopped = errors.New("the session has not stopped")

// ErrNoSuchStep is returned (wrapped) for a rewind to a step that is not
// a live step of the session that ended.
var ErrNoSuchStep = errors.New("no such step")

// Rewind is one rewind as the state shows it.
type Rewind struct {
	// Seq is the session.rewound event's.
	Seq         int64     `json:"seq"`
	Time        time.Time `json:"time"`
	ToIteration int       `json:"to_iteration"`
	// Steps are the steps set aside, in the order they ran.
	Steps      []int  `json:"steps"`
	Checkpoint string `json:"checkpoint,omitempty"`
	// Usage and CostUSD are what the set-aside steps' model calls used:
	// spent, but no longer counted against the session's budgets.
	Usage   model.Usage `json:"usage"`
	CostUSD float64     `json:"cost_usd,omitempty"`
}

// Rewinds is what rewinding needs and what it left: the workspace
// checkpoints of the live steps, the rewinds made, and a restore point
// per live step that ended.
type Rewinds struct {
	// Checkpoints are the workspace snapshots of the live steps, in the
	// order they were taken (a rewind drops those of the steps it set
	// aside).
	Checkpoints []WorkspaceCheckpointed `json:"checkpoints,omitempty"`
	Rewinds     []Rewind                `json:"rewinds,omitempty"`
	// points are the restore points of the live steps that ended, in
	// order.
	points []restorePoint
}

// restorePoint is what a rewind to the end of step N restores: every
// part of the state the session goes on from, as it was right after
// step N's iteration.ended. The header's other fields never change after
// session.started, or are set by the rewind itself. A session keeps one
// per step, so what most steps' ends leave empty is kept apart (rest).
type restorePoint struct {
	N            int
	CurrentModel string
	Totals       Totals
	// Epoch and Len name the conversation: its first Len messages, in
	// the Epoch-th conversation (one more after each condensation).
	Epoch, Len, Condensations int
	ProtocolSteps             int
	Modified, LastModified    int
	Stuck, Warnings           int
	// Steps and RecentFrom are stuck detection's step log: its length
	// then, and where the steps it looked at began.
	Steps, RecentFrom, CondensedRun int
	// rest is nil when every part of it is empty (noRest).
	rest *restoreRest
}

// restoreRest is the part of a restore point most steps' ends leave
// empty: no call or approval pending, no plan, memory or answer.
type restoreRest struct {
	Turn          Turn
	Decisions     map[string]ApprovalDecided
	Allowed       map[string]Allowance
	Plan          *Plan
	Memory        map[string]json.RawMessage
	Verification  *VerificationFinished
	LimitWarnings map[string]bool
	PendingAnswer string
	AnswerSeq     int64
	WrappedUp     bool
	Answer        AnswerState
}

// noRest is the empty rest of a restore point.
var noRest restoreRest

func (r *restoreRest) empty() bool {
	t := &r.Turn
	return len(t.PendingCalls) == 0 && len(t.OpenToolCalls) == 0 && len(t.PendingApprovals) == 0 &&
		len(r.Decisions) == 0 && len(r.Allowed) == 0 && r.Plan == nil && len(r.Memory) == 0 &&
		r.Verification == nil && len(r.LimitWarnings) == 0 && r.PendingAnswer == "" && r.AnswerSeq == 0 &&
		!r.WrappedUp && r.Answer.AnswerCorrections == 0 && r.Answer.AnswerJSON == nil
}

// restored is the point's rest, noRest when it has none.
func (p *restorePoint) restored() *restoreRest {
	if p.rest == nil {
		return &noRest
	}
	return p.rest
}

// restorePointJSON is a restore point as a snapshot writes it.
type restorePointJSON struct {
	N             int                        `json:"n"`
	CurrentModel  string                     `json:"current_model,omitempty"`
	Totals        Totals                     `json:"totals"`
	Epoch         int                        `json:"epoch"`
	Len           int                        `json:"len"`
	Condensations int                        `json:"condensations"`
	Turn          Turn                       `json:"turn"`
	Decisions     map[string]ApprovalDecided `json:"decisions,omitempty"`
	Allowed       map[string]Allowance       `json:"allowed,omitempty"`
	Plan          *Plan                      `json:"plan,omitempty"`
	Memory        map[string]json.RawMessage `json:"memory,omitempty"`
	ProtocolSteps int                        `json:"protocol_steps"`
	Verification  *VerificationFinished      `json:"verification,omitempty"`
	Modified      int                        `json:"modified"`
	LastModified  int                        `json:"last_modified"`
	Stuck         int                        `json:"stuck"`
	Warnings      int                        `json:"warnings"`
	LimitWarnings map[string]bool            `json:"limit_warnings,omitempty"`
	Steps         int                        `json:"steps"`
	RecentFrom    int                        `json:"recent_from"`
	CondensedRun  int                        `json:"condensed_in_row,omitempty"`
	PendingAnswer string                     `json:"pending_answer,omitempty"`
	AnswerSeq     int64                      `json:"answer_seq,omitempty"`
	WrappedUp     bool                       `json:"wrapped_up,omitempty"`
	Answer        AnswerState                `json:"answer"`
}

func (p restorePoint) MarshalJSON() ([]byte, error) {
	r := p.restored()
	return json.Marshal(restorePointJSON{
		N: p.N, CurrentModel: p.CurrentModel, Totals: p.Totals, Epoch: p.Epoch, Len: p.Len, Condensations: p.Condensations,
		Turn: r.Turn, Decisions: r.Decisions, Allowed: r.Allowed, Plan: r.Plan, Memory: r.Memory,
		ProtocolSteps: p.ProtocolSteps, Verification: r.Verification, Modified: p.Modified, LastModified: p.LastModified,
		Stuck: p.Stuck, Warnings: p.Warnings, LimitWarnings: r.LimitWarnings, Steps: p.Steps, RecentFrom: p.RecentFrom,
		CondensedRun: p.CondensedRun, PendingAnswer: r.PendingAnswer, AnswerSeq: r.AnswerSeq, WrappedUp: r.WrappedUp, Answer: r.Answer,
	})
}

func (p *restorePoint) UnmarshalJSON(b []byte) error {
	var j restorePointJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*p = restorePoint{
		N: j.N, CurrentModel: j.CurrentModel, Totals: j.Totals, Epoch: j.Epoch, Len: j.Len, Condensations: j.Condensations,
		ProtocolSteps: j.ProtocolSteps, Modified: j.Modified, LastModified: j.LastModified, Stuck: j.Stuck, Warnings: j.Warnings,
		Steps: j.Steps, RecentFrom: j.RecentFrom, CondensedRun: j.CondensedRun,
	}
	r := restoreRest{Turn: j.Turn, Decisions: j.Decisions, Allowed: j.Allowed, Plan: j.Plan, Memory: j.Memory,
		Verification: j.Verification, LimitWarnings: j.LimitWarnings, PendingAnswer: j.PendingAnswer, AnswerSeq: j.AnswerSeq,
		WrappedUp: j.WrappedUp, Answer: j.Answer}
	if !r.empty() {
		p.rest = &r
	}
	return nil
}

// keep records what e adds for rewinding: a restore point when a live
// step ends, a checkpoint when one is taken. It runs after every other
// part of the state applied e.
func (s *State) keepForRewind(e Event) {
	switch d := e.Data.(type) {
	case *IterationEnded:
		if it := s.current(); it != nil && it.N == d.N {
			s.points = appendSteady(s.points, s.restorePoint(d.N), 4)
		}
	case *WorkspaceCheckpointed:
		s.Checkpoints = append(s.Checkpoints, *d)
	}
}

// restorePoint copies what a rewind to the end of step n restores. Maps
// and the plan are copied (they change in place later); slices that only
// grow are kept as lengths.
func (s *State) restorePoint(n int) restorePoint {
	p := restorePoint{
		N: n, CurrentModel: s.CurrentModel, Totals: s.Totals,
		Epoch: len(s.past), Len: len(s.Conversation), Condensations: len(s.Condensations),
		ProtocolSteps: len(s.ProtocolState.Steps), Modified: len(s.Modified), LastModified: s.LastModifiedIteration,
		Stuck: s.StuckDetections, Warnings: len(s.Warnings), Steps: len(s.stepLog), RecentFrom: s.recentFrom,
		CondensedRun: s.condensedInRow,
	}
	r := restoreRest{
		Turn: s.Turn, Decisions: maps.Clone(s.Decisions), Allowed: maps.Clone(s.Allowed), Memory: maps.Clone(s.Memory),
		Verification: s.Verification, LimitWarnings: maps.Clone(s.LimitWarnings),
		PendingAnswer: s.PendingAnswer, AnswerSeq: s.answerSeq, WrappedUp: s.WrappedUp, Answer: s.AnswerState,
	}
	r.Turn.Decisions = nil
	r.Answer.AnswerSchema = nil // set by session.started, never changed: not restored
	if s.Plan != nil {
		plan := *s.Plan
		r.Plan = &plan
	}
	if !r.empty() {
		p.rest = new(restoreRest) // r itself stays off the heap
		*p.rest = r
	}
	return p
}

// CanRewindTo reports whether step n is a live step that ended: one the
// session can be rewound to.
func (s *State) CanRewindTo(n int) bool { return s.pointOf(n) >= 0 }

// RewindableSteps are the live steps that ended, in order: the steps the
// session can be rewound to.
func (s *State) RewindableSteps() []int {
	out := make([]int, len(s.points))
	for i, p := range s.points {
		out[i] = p.N
	}
	return out
}

// CheckpointAt is the live checkpoint a rewind or fork to the end of step
// n restores: the last taken at or before that step's end; nil when
// there is none.
func (s *State) CheckpointAt(n int) *WorkspaceCheckpointed {
	var ck *WorkspaceCheckpointed
	for i := range s.Checkpoints {
		if s.Checkpoints[i].Iteration <= n {
			ck = &s.Checkpoints[i]
		}
	}
	return ck
}

// StepsAfter are the live steps a rewind to the end of step n sets
// aside, in the order they ran.
func (s *State) StepsAfter(n int) []int {
	live := s.liveIndex(n)
	if live < 0 {
		return nil
	}
	var out []int
	for _, it := range s.Iterations[live+1:] {
		if !it.Rewound {
			out = append(out, it.N)
		}
	}
	return out
}

func (s *State) pointOf(n int) int {
	for i := len(s.points) - 1; i >= 0; i-- {
		if s.points[i].N == n {
			return i
		}
	}
	return -1
}

// liveIndex is the index in Iterations of live step n, -1 when none.
func (s *State) liveIndex(n int) int {
	for i := len(s.Iterations) - 1; i >= 0; i-- {
		if it := &s.Iterations[i]; !it.Rewound && it.N == n {
			return i
		}
	}
	return -1
}

// rewind applies session.rewound: the steps after d.ToIteration are set
// aside and the rest of the state is restored from its restore point.
func (s *State) rewind(e Event, d *SessionRewound) error {
	i := s.pointOf(d.ToIteration)
	live := s.liveIndex(d.ToIteration)
	if i < 0 || live < 0 {
		return fmt.Errorf("session %s: event %d rewinds to step %d, which is not a finished step of the session", e.SessionID, e.Seq, d.ToIteration)
	}
	p := s.points[i]
	rw := Rewind{Seq: e.Seq, Time: e.Time, ToIteration: p.N, Checkpoint: d.Checkpoint, Steps: []int{}}
	for j := live + 1; j < len(s.Iterations); j++ {
		it := &s.Iterations[j]
		if it.Rewound {
			continue
		}
		// Set aside, kept for audit: it is no longer part of the session.
		it.Rewound = true
		if it.Status == IterationInProgress {
			it.Status = IterationFailed
		}
		rw.Steps = append(rw.Steps, it.N)
		rw.Usage = rw.Usage.Add(it.Usage)
		rw.CostUSD += it.CostUSD
	}
	s.Rewinds.Rewinds = append(s.Rewinds.Rewinds, rw)
	s.points = s.points[:i+1]
	kept := s.Checkpoints[:0:0]
	for _, c := range s.Checkpoints {
		if c.Iteration <= p.N {
			kept = append(kept, c)
		}
	}
	s.Checkpoints = kept

	// The header: stopped at the end of step N, waiting to be resumed.
	h := &s.Header
	h.CurrentModel = p.CurrentModel
	h.Status, h.Reason, h.Detail = StatusPaused, ReasonRewound, fmt.Sprintf("rewound to the end of step %d", p.N)
	h.Answer, h.Partial, h.Question = "", false, ""
	h.CompletedAt, h.Duration = time.Time{}, 0

	r := p.restored()
	s.Totals = p.Totals
	s.Dialogue.rewind(p.Epoch, p.Len, p.Condensations)
	s.Turn = r.Turn
	s.Turn.Decisions = maps.Clone(r.Decisions)
	s.Allowed = maps.Clone(r.Allowed)
	s.Plan = nil
	if r.Plan != nil {
		plan := *r.Plan
		s.Plan = &plan
	}
	s.Memory = maps.Clone(r.Memory)
	s.ProtocolState.Steps = s.ProtocolState.Steps[:p.ProtocolSteps:p.ProtocolSteps]
	s.Verification = r.Verification
	s.Modified = s.Modified[:p.Modified:p.Modified]
	s.LastModifiedIteration, s.StuckDetections = p.LastModified, p.Stuck
	s.Warnings = s.Warnings[:p.Warnings:p.Warnings]
	s.LimitWarnings = maps.Clone(r.LimitWarnings)
	// Capacity cut at the length: the next step is appended to a copy,
	// never over a step an older restore point still names.
	s.stepLog, s.recentFrom = s.stepLog[:p.Steps:p.Steps], p.RecentFrom
	s.condensedInRow = p.CondensedRun
	s.PendingAnswer, s.answerSeq, s.WrappedUp = r.PendingAnswer, r.AnswerSeq, r.WrappedUp
	schema := s.AnswerSchema
	s.AnswerState = r.Answer
	s.AnswerSchema = schema
	return nil
}

// rewind makes the conversation the first n messages of the epoch-th
// one, and the condensations the first c. Capacity is cut at n: the next
// message is appended to a copy, never over a message an older restore
// point or conversation still holds.
func (c *Dialogue) rewind(epoch, n, cond int) {
	if epoch < len(c.past) {
		c.Conversation = c.past[epoch]
		c.past = c.past[:epoch:epoch]
	}
	c.Conversation = c.Conversation[:n:n]
	c.Condensations = c.Condensations[:cond:cond]
}

// LiveStepEnd is how many of a session's events hold live step k up to
// its end, the checkpoint taken right after it included: the prefix a
// fork at step k copies. Steps a rewind set aside are not live; a step
// redone after a rewind is found where it was redone. ok is false when
// step k has no live end in events.
func LiveStepEnd(events []Event, k int) (end int, ok bool) {
	ends := map[int]int{}
	for i, e := range events {
		switch d := e.Data.(type) {
		case *IterationEnded:
			ends[d.N] = i + 1
		case *SessionRewound:
			for n := range ends {
				if n > d.ToIteration {
					delete(ends, n)
				}
			}
		}
	}
	end, ok = ends[k]
	if !ok {
		return 0, false
	}
	for end < len(events) {
		if d, isCk := events[end].Data.(*WorkspaceCheckpointed); isCk && d.Iteration == k {
			end++
			continue
		}
		break
	}
	return end, true
}
