package loop

import "strings"

// FollowUp is the task for a new session that finishes what an ended
// session left: the plan's unfinished steps and the verification checks
// that still fail. ok is false when nothing is left — the session has not
// ended, or its verification did not run or passed.
func (st *State) FollowUp() (task string, ok bool) {
	v := st.Verification
	if !st.Status.Finished() || v == nil || v.Outcome == VerifyPass {
		return "", false
	}
	var failing, remaining []string
	for _, c := range v.Checks {
		if !c.Passed {
			failing = append(failing, c.Name)
		}
	}
	if st.Plan != nil {
		for _, s := range st.Plan.Steps {
			if s.Status != StepCompleted && s.Status != StepSkipped {
				remaining = append(remaining, s.Title)
			}
		}
	}
	task = "Make these checks pass: " + strings.Join(failing, ", ")
	if len(remaining) > 0 {
		task = "Finish: " + strings.Join(remaining, "; ") + ". " + task
	}
	return task, true
}

// FollowUpLabel marks a session started to finish another's work; its
// value is the other session's id.
const FollowUpLabel = "follow_up_of"
