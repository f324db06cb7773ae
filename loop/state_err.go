package loop

import "fmt"

// EndError is the error State.Err makes of a session that stopped without
// completing: its status, reason and detail.
type EndError struct {
	ID     string
	Status Status
	Reason StopReason
	Detail string
}

func (e *EndError) Error() string {
	msg := fmt.Sprintf("session %s %s: %s", e.ID, e.Status, e.Reason)
	if e.Detail != "" {
		msg += " (" + e.Detail + ")"
	}
	return msg
}

// Err turns the session's outcome into an error, for callers who want one.
// Runner.Run returns a nil error for every session it ran to a stop — one
// a limit ended (failed, max_iterations), one that failed or paused — and
// reports the outcome in Status and Reason; Err is nil only for a completed
// session or one that has not stopped yet, and otherwise an *EndError.
// Paused and waiting sessions can go on (Status.Finished is false): resume
// or reply to them.
func (s *State) Err() error {
	switch s.Status {
	case StatusCompleted, StatusRunning, StatusIdle:
		return nil
	}
	return &EndError{ID: s.ID, Status: s.Status, Reason: s.Reason, Detail: s.Detail}
}
