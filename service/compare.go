package service

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/agentloop/agentloop/api"
	"github.com/agentloop/agentloop/checkpoint"
	"github.com/agentloop/agentloop/loop"
)

// Compare sets sessions a and b side by side: each one's outcome and
// totals, their live steps paired by number (steps a rewind set aside
// are no longer part of a session and are left out), and the diff from
// a's final workspace to b's. A side's files are its workspace directory
// as it is now when it still exists, else its last live checkpoint, else
// none. Nothing is changed.
func (s *Service) Compare(ctx context.Context, c Caller, a, b string) (*api.Comparison, error) {
	if err := c.need(ScopeRead); err != nil {
		return nil, err
	}
	if a == "" || b == "" {
		return nil, invalid("compare needs two sessions: a and b")
	}
	sta, _, err := s.load(ctx, c, a)
	if err != nil {
		return nil, err
	}
	stb, _, err := s.load(ctx, c, b)
	if err != nil {
		return nil, err
	}
	out := &api.Comparison{A: s.compareSide(sta), B: s.compareSide(stb), Steps: pairSteps(sta, stb), Files: []api.FileChange{}}
	fa, fb := s.filesOf(sta), s.filesOf(stb)
	out.A.Workspace, out.B.Workspace = sideKind(fa), sideKind(fb)
	cs := s.cfg.Checkpoints
	if cs == nil {
		cs = &checkpoint.Store{} // directories only: no side is a checkpoint
	}
	d, err := cs.Diff(ctx, fa, fb, 0)
	if err != nil {
		return nil, fmt.Errorf("comparing the workspaces of sessions %s and %s: %w", a, b, err)
	}
	for _, f := range d.Files {
		out.Files = append(out.Files, api.FileChange{Path: f.Path, Change: f.Change})
	}
	out.Diff, out.DiffTruncated = d.Patch, d.Truncated
	return out, nil
}

// filesOf is where a session's final files are: its workspace directory
// when it exists, else its last live checkpoint (when this process keeps
// checkpoints), else nothing.
func (s *Service) filesOf(st *loop.State) checkpoint.Side {
	if st.Workspace != "" {
		if info, err := os.Stat(st.Workspace); err == nil && info.IsDir() {
			// Read starting from the session's snapshots, when they are here.
			return checkpoint.Side{Dir: st.Workspace, Session: st.ID}
		}
	}
	if s.cfg.Checkpoints != nil && len(st.Checkpoints) > 0 {
		return checkpoint.Side{Session: st.ID, ID: st.Checkpoints[len(st.Checkpoints)-1].ID}
	}
	return checkpoint.Side{}
}

func sideKind(side checkpoint.Side) string {
	switch {
	case side.Dir != "":
		return "directory"
	case side.ID != "":
		return "checkpoint"
	}
	return "none"
}

// compareSide is a session's outcome and totals. A session still going
// has lasted until now.
func (s *Service) compareSide(st *loop.State) api.CompareSide {
	d := time.Duration(st.Duration)
	if st.CompletedAt.IsZero() && !st.StartedAt.IsZero() {
		d = s.cfg.Clock().Sub(st.StartedAt)
	}
	side := api.CompareSide{ID: st.ID, Task: st.Task, Model: cmp.Or(st.CurrentModel, st.Model), Status: string(st.Status), Reason: string(st.Reason),
		Answer: st.Answer, Steps: len(liveSteps(st)), ToolCalls: st.ToolCallCount, InputTokens: st.Usage.InputTokens, OutputTokens: st.Usage.OutputTokens,
		CostUSD: st.CostUSD, Duration: seconds(d)}
	if f := st.ForkedFrom; f != nil {
		side.ForkedFrom = &api.ForkedFrom{ID: f.ID, Iteration: f.Iteration}
	}
	return side
}

// liveSteps are a session's steps that are part of it: those a rewind set
// aside are not.
func liveSteps(st *loop.State) []*loop.Iteration {
	var out []*loop.Iteration
	for i := range st.Iterations {
		if !st.Iterations[i].Rewound {
			out = append(out, &st.Iterations[i])
		}
	}
	return out
}

// pairSteps pairs the live steps of a and b by number, from 1 to the
// last either has.
func pairSteps(a, b *loop.State) []api.CompareStep {
	byNumber := func(st *loop.State) map[int]*loop.Iteration {
		m := map[int]*loop.Iteration{}
		for _, it := range liveSteps(st) {
			m[it.N] = it
		}
		return m
	}
	ma, mb := byNumber(a), byNumber(b)
	last := 0
	for n := range ma {
		last = max(last, n)
	}
	for n := range mb {
		last = max(last, n)
	}
	out := make([]api.CompareStep, 0, last)
	for n := 1; n <= last; n++ {
		out = append(out, api.CompareStep{Number: n, A: stepSide(ma[n]), B: stepSide(mb[n])})
	}
	return out
}

func stepSide(it *loop.Iteration) *api.StepSide {
	if it == nil {
		return nil
	}
	side := &api.StepSide{Status: string(it.Status), Model: it.Model, ToolCalls: make([]api.StepToolCall, len(it.ToolCalls)),
		InputTokens: it.Usage.InputTokens, OutputTokens: it.Usage.OutputTokens, CostUSD: it.CostUSD, Duration: seconds(time.Duration(it.Duration))}
	for i, tc := range it.ToolCalls {
		side.ToolCalls[i] = api.StepToolCall{ToolName: tc.Name, Status: string(tc.Status)}
	}
	return side
}

// seconds writes d as the API writes durations: seconds with an "s",
// "1.5s", which JavaScript's parseFloat and Go's ParseDuration both read.
func seconds(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + "s"
}
