package loop

import (
	"context"
	"fmt"
)

// TypeWorkspaceCheckpointed records a snapshot of the session's workspace.
const TypeWorkspaceCheckpointed EventType = "workspace.checkpointed"

// WarnCheckpointFailed: a workspace snapshot could not be taken; the
// session carries on without it.
const WarnCheckpointFailed WarningCode = "checkpoint_failed"

// WorkspaceCheckpointed says the workspace as it was at the end of
// iteration Iteration is kept as checkpoint ID (Iteration 0: as the
// session found it, taken when iteration 1 starts).
type WorkspaceCheckpointed struct {
	Iteration int    `json:"iteration"`
	ID        string `json:"id"`
}

func (*WorkspaceCheckpointed) EventType() EventType { return TypeWorkspaceCheckpointed }

// ForkedFrom names the session and iteration a forked session's log was
// copied from.
type ForkedFrom struct {
	ID        string `json:"id"`
	Iteration int    `json:"iteration"`
}

// Checkpointer snapshots the workspace of the session whose state is st,
// as it is at the end of iteration (0: before the first). An empty id
// with a nil error means no snapshot is kept (checkpoints are off for
// this session).
type Checkpointer func(ctx context.Context, st *State, iteration int) (id string, err error)

// checkpointAfter takes the checkpoints the event just recorded calls
// for: the workspace as found, when iteration 1 starts; and the
// workspace after each iteration whose tool calls modified files or ran
// a command. A failed snapshot is a warning, never the session's end.
func (s *Session) checkpointAfter(p Payload) {
	take := s.r.cfg.Checkpoint
	if take == nil {
		return
	}
	n := -1
	switch e := p.(type) {
	case *IterationStarted:
		if e.N == 1 {
			n = 0
		}
	case *IterationEnded:
		if iterationChangedFiles(s.state, e.N) {
			n = e.N
		}
	}
	if n < 0 {
		return
	}
	// The snapshot is taken even while the session is being stopped: it
	// records what the workspace holds, whatever comes next.
	id, err := take(context.Background(), s.state, n)
	if err != nil {
		s.emit(&Warning{Code: WarnCheckpointFailed, Message: fmt.Sprintf("the workspace after iteration %d was not checkpointed: %v", n, err)})
		return
	}
	if id != "" {
		s.emit(&WorkspaceCheckpointed{Iteration: n, ID: id})
	}
}

// iterationChangedFiles reports whether iteration n, the live one that
// just ended, recorded tool calls that modified files or ran a command
// (which may change any file).
func iterationChangedFiles(st *State, n int) bool {
	it := st.current()
	if it == nil || it.N != n {
		return false
	}
	for _, c := range it.ToolCalls {
		if len(c.Modified) > 0 || c.Name == "execute_command" {
			return true
		}
	}
	return false
}
