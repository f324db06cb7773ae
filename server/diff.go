package server

import (
	"net/http"
	"sync"

	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/tool/workspace"
)

// Workspaces remembers the workspace each session's tools use in this
// process, which tracks what they change: the source of a session's diff.
// Give its Track to assemble.Resolver.OnWorkspace.
type Workspaces struct {
	mu    sync.Mutex
	byID  map[string]*workspace.Workspace
	order []string
}

const workspacesKept = 1000

// Track records a session's workspace (the oldest are forgotten past 1000).
func (w *Workspaces) Track(sessionID string, ws *workspace.Workspace) {
	if sessionID == "" {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.byID == nil {
		w.byID = map[string]*workspace.Workspace{}
	}
	if _, ok := w.byID[sessionID]; !ok {
		w.order = append(w.order, sessionID)
	}
	w.byID[sessionID] = ws
	if len(w.order) > workspacesKept {
		delete(w.byID, w.order[0])
		w.order = w.order[1:]
	}
}

func (w *Workspaces) get(id string) *workspace.Workspace {
	if w == nil {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.byID[id]
}

// diffBody is GET /v1/sessions/{id}/diff.
type diffBody struct {
	// Files are the paths the session changed, from its log.
	Files []string `json:"files"`
	// Diff is a unified diff against each file's content before the
	// session first changed it: known to the server process that ran the
	// session since it started, else empty (Note says so).
	Diff string `json:"diff"`
	Note string `json:"note,omitempty"`
}

func (s *Server) diff(w http.ResponseWriter, r *http.Request) {
	s.part(w, r, func(st *loop.State) any {
		out := diffBody{Files: changedFiles(st)}
		if ws := s.cfg.Workspaces.get(st.ID); ws != nil {
			var err error
			if out.Diff, err = ws.Diff(); err != nil {
				out.Note = err.Error()
			}
		} else if len(out.Files) > 0 {
			out.Note = "the files' earlier content is known only to the server process that ran the session, and this one did not; the list of files is complete"
		}
		return out
	})
}

func changedFiles(st *loop.State) []string {
	seen := map[string]bool{}
	out := []string{}
	for _, m := range st.Modified {
		if !seen[m.Path] {
			seen[m.Path] = true
			out = append(out, m.Path)
		}
	}
	return out
}
