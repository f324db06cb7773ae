package loop

import (
	"context"
	"fmt"

	"github.com/agentloop/agentloop/model"
)

// RewindTo says where Runner.Rewind takes a session and what it does
// around the record.
type RewindTo struct {
	// At is the step whose end the session goes back to (from 1).
	At int
	// Checkpoint is the workspace checkpoint restored, taken at the end
	// of step CheckpointIteration (recorded; Runner.Rewind does not touch
	// files).
	Checkpoint          string
	CheckpointIteration int
	// Message, when set, is a person's message the model reads after
	// step At's conversation; the session is resumed with it.
	Message string
	// Before runs with the session claimed and its state before the
	// rewind (st.Seq+1 is the seq session.rewound gets); an error records
	// nothing. After runs once the rewind is durable and before the
	// session runs again; an error leaves the rewind recorded and the
	// session not running here (it is resumable like any stopped one).
	Before func(ctx context.Context, st *State) error
	After  func(ctx context.Context, st *State) error
}

// Rewind takes an ended or paused session back to the end of step
// to.At: it records session.rewound — and, when the session was paused
// or a message is given, the message and session.resumed in the same
// commit — then runs the session here if it was resumed. The returned
// session's Done is already closed when it was not resumed.
func (r *Runner) Rewind(ctx context.Context, id string, to RewindTo) (*Session, error) {
	events, err := r.load(ctx, id)
	if err != nil {
		return nil, err
	}
	st, err := Fold(events)
	if err != nil {
		return nil, err
	}
	if err := CheckRewind(st, to.At); err != nil {
		return nil, err
	}
	s := r.newSession(id, st)
	s.spec, _ = events[0].Data.(*SessionStarted)
	if err := r.claim(s); err != nil {
		return nil, err
	}
	if to.Before != nil {
		if err := to.Before(ctx, st); err != nil {
			r.release(s)
			return nil, err
		}
	}
	resume := RewindResumes(st, to.Message)
	for _, p := range RewindPayloads(st, to) {
		s.emit(p)
	}
	if err := s.flush(ctx); err != nil {
		r.release(s)
		return nil, err
	}
	if to.After != nil {
		if err := to.After(ctx, s.state); err != nil {
			r.release(s)
			return nil, err
		}
	}
	return r.runHere(ctx, s, resume)
}

// RewindPayloads are what a rewind of a session in state st records, in
// one commit: session.rewound, the person's message when one is given,
// and session.resumed when the rewind resumes it (RewindResumes).
func RewindPayloads(st *State, to RewindTo) []Payload {
	out := []Payload{&SessionRewound{ToIteration: to.At, Checkpoint: to.Checkpoint, CheckpointIteration: to.CheckpointIteration, Message: to.Message}}
	if to.Message != "" {
		out = append(out, &MessageAdded{Role: model.RoleUser, Content: to.Message, Kind: KindUser})
	}
	if RewindResumes(st, to.Message) {
		out = append(out, &SessionResumed{Note: fmt.Sprintf("rewound to step %d", to.At)})
	}
	return out
}

// RewindResumes reports whether a rewind of a session in state st, with
// message (may be empty), resumes it: when it was paused, or is given a
// message.
func RewindResumes(st *State, message string) bool {
	return st.Status == StatusPaused || message != ""
}

// CheckRewind says why a session in state st cannot be rewound to the
// end of step at, or nil when it can: it must have stopped (ended or
// paused) and at must be a live step that ended.
func CheckRewind(st *State, at int) error {
	if !st.Status.Finished() && st.Status != StatusPaused {
		return fmt.Errorf("session %s is %s: %w; pause it (or let it end) before rewinding", st.ID, st.Status, ErrNotStopped)
	}
	if !st.CanRewindTo(at) {
		steps := st.RewindableSteps()
		if len(steps) == 0 {
			return fmt.Errorf("session %s has no finished step to rewind to: %w", st.ID, ErrNoSuchStep)
		}
		return fmt.Errorf("session %s has no finished step %d to rewind to (its steps are %d to %d): %w", st.ID, at, steps[0], steps[len(steps)-1], ErrNoSuchStep)
	}
	return nil
}
