package loop

// Settlement is what the session still owes a final answer (a gate's
// verdict, verification, its end) and whether the limit's wrap-up call
// was made. Both are derived from the log, so a session that crashed while
// settling an answer settles it on resume instead of asking the model
// again.
type Settlement struct {
	// PendingAnswer is a final answer the session has not settled yet
	// (iteration.ended carried it; nothing has followed that decides it).
	PendingAnswer string `json:"-"`
	// answerSeq is the seq of the iteration.ended that carried it.
	answerSeq int64
	// WrappedUp: the limit's wrap-up call was made.
	WrappedUp bool `json:"-"`
}

// answerChecked reports whether events followed the pending answer (a
// gate's verdict): settling it again skips the gate. seq is the state's.
func (s *Settlement) answerChecked(seq int64) bool { return s.PendingAnswer != "" && seq > s.answerSeq }

func (s *Settlement) apply(e Event) {
	switch d := e.Data.(type) {
	case *IterationEnded:
		if d.Answer != "" {
			s.PendingAnswer, s.answerSeq = d.Answer, e.Seq
		}
	case *IterationStarted:
		s.PendingAnswer, s.WrappedUp = "", false
	case *MessageAdded, *SessionWaiting, *SessionEnded:
		// Feedback to the model, a question to a person or the end: the
		// answer is decided. (A pause keeps it: resume settles it.)
		s.PendingAnswer = ""
	case *ModelResponded:
		if d.WrapUp {
			s.WrappedUp = true
		}
	}
}
