package loop

// trackSettlement keeps PendingAnswer and WrappedUp: what the session
// still owes a final answer (a gate's verdict, verification, its end)
// and whether the limit's wrap-up call was made. Both are derived from
// the log, so a session that crashed while settling an answer settles it
// on resume instead of asking the model again.
func (s *State) trackSettlement(e Event) {
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
