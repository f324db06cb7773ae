package checkpoint

import (
	"context"
	"fmt"

	"github.com/agentloop/agentloop/loop"
)

// Hook is the loop.Checkpointer that keeps sessions' snapshots in s. A
// session without a workspace, or one off reports true for (its profile
// turned checkpoints off), takes none.
func (s *Store) Hook(off func(st *loop.State) bool) loop.Checkpointer {
	return func(ctx context.Context, st *loop.State, iteration int) (string, error) {
		if st.Workspace == "" || (off != nil && off(st)) {
			return "", nil
		}
		return s.Save(ctx, st.ID, st.Workspace, fmt.Sprintf("session %s iteration %d", st.ID, iteration))
	}
}
