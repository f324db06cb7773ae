package loop

import (
	"encoding/json"
	"fmt"

	"github.com/agentloop/agentloop/model"
)

// A snapshot is a state serialised whole: its public JSON plus what that
// JSON leaves out (the conversation, decisions, limit warnings, the
// reduced iterations stuck detection keeps, per-iteration bookkeeping, the answer owed).
// Restoring the snapshot taken after event k and folding events k+1… gives
// the state the whole log folds to (a property test holds it to that), so
// a long session need not be folded from its first event.
type snapshot struct {
	Version       int                        `json:"v"`
	State         *State                     `json:"state"`
	Conversation  []model.Message            `json:"conversation,omitempty"`
	Decisions     map[string]ApprovalDecided `json:"decisions,omitempty"`
	LimitWarnings map[string]bool            `json:"limit_warnings,omitempty"`
	Steps         []stepRecord               `json:"steps,omitempty"`
	RecentFrom    int                        `json:"recent_from,omitempty"`
	CondensedRun  int                        `json:"condensed_in_row,omitempty"`
	Turns         []turnRecord               `json:"turns,omitempty"`
	PendingAnswer string                     `json:"pending_answer,omitempty"`
	AnswerSeq     int64                      `json:"answer_seq,omitempty"`
	WrappedUp     bool                       `json:"wrapped_up,omitempty"`
	// Points and Past are what a rewind restores from (rewind.go).
	Points []restorePoint    `json:"points,omitempty"`
	Past   [][]model.Message `json:"past,omitempty"`
}

// snapshotVersion is the snapshot format this build writes and reads.
const snapshotVersion = 3 // 3: restore points hold no answer schema

type stepRecord struct {
	Action      string `json:"action,omitempty"`
	Observation string `json:"observation,omitempty"`
	Text        string `json:"text,omitempty"`
	ErrorResult bool   `json:"error_result,omitempty"`
	Failed      bool   `json:"failed,omitempty"`
	Empty       bool   `json:"empty,omitempty"`
}

type turnRecord struct {
	Responded  bool `json:"responded,omitempty"`
	Correction bool `json:"correction,omitempty"`
	Faults     int  `json:"faults,omitempty"`
}

// Snapshot serialises the whole state (see RestoreState).
func (s *State) Snapshot() ([]byte, error) {
	sn := snapshot{Version: snapshotVersion, State: s, Conversation: s.Conversation, Decisions: s.Decisions,
		LimitWarnings: s.LimitWarnings, PendingAnswer: s.PendingAnswer, AnswerSeq: s.answerSeq, WrappedUp: s.WrappedUp,
		CondensedRun: s.condensedInRow, Points: s.points, Past: s.past, RecentFrom: s.recentFrom}
	for _, r := range s.stepLog {
		sn.Steps = append(sn.Steps, stepRecord{r.action, r.observation, r.text, r.errorResult, r.failed, r.empty})
	}
	for _, it := range s.Iterations {
		sn.Turns = append(sn.Turns, turnRecord{it.Responded, it.Correction, it.Faults})
	}
	return json.Marshal(sn)
}

// RestoreState rebuilds a state from Snapshot's bytes.
func RestoreState(b []byte) (*State, error) {
	var sn snapshot
	if err := json.Unmarshal(b, &sn); err != nil {
		return nil, fmt.Errorf("state snapshot: %w", err)
	}
	if sn.Version != snapshotVersion || sn.State == nil {
		return nil, fmt.Errorf("state snapshot: version %d, this build reads version %d", sn.Version, snapshotVersion)
	}
	s := sn.State
	if len(sn.Turns) != len(s.Iterations) {
		return nil, fmt.Errorf("state snapshot: %d iterations but %d turn records", len(s.Iterations), len(sn.Turns))
	}
	s.Conversation, s.Decisions, s.LimitWarnings = sn.Conversation, sn.Decisions, sn.LimitWarnings
	s.PendingAnswer, s.answerSeq, s.WrappedUp = sn.PendingAnswer, sn.AnswerSeq, sn.WrappedUp
	s.condensedInRow = sn.CondensedRun
	s.points, s.past = sn.Points, sn.Past
	s.recentFrom = sn.RecentFrom
	for _, r := range sn.Steps {
		s.stepLog = append(s.stepLog, step{r.Action, r.Observation, r.Text, r.ErrorResult, r.Failed, r.Empty})
	}
	for i, t := range sn.Turns {
		s.Iterations[i].Responded, s.Iterations[i].Correction, s.Iterations[i].Faults = t.Responded, t.Correction, t.Faults
	}
	return s, nil
}
