package loop

import "github.com/agentloop/agentloop/tool"

// Progress is what the session changed and how it is going: workspace
// changes, warnings (to people and the model's limit warnings) and the
// reduced recent iterations stuck detection looks at.
type Progress struct {
	// Modified lists every workspace change, in order.
	Modified []tool.Modification `json:"modified,omitempty"`
	// LastModifiedIteration is the last iteration that changed the workspace.
	LastModifiedIteration int `json:"last_modified_iteration"`
	// StuckDetections counts stuck.detected events.
	StuckDetections int             `json:"stuck_detections"`
	Warnings        []Warning       `json:"warnings,omitempty"`
	LimitWarnings   map[string]bool `json:"-"`

	// stepLog holds the live finished iterations reduced for stuck
	// detection, in order; stuck detection looks at those from
	// recentFrom on (the last recentCap of them). condensedInRow counts
	// the condensations since the model last replied. watchForStuck keeps
	// all three. The log only grows between rewinds (a rewind cuts it
	// back), so a restore point names its length rather than copying it.
	stepLog        []step
	recentFrom     int
	condensedInRow int
}

// apply folds e; it is the iteration e belongs to (for iteration.ended,
// already closed by History), n the current iteration's number and l the
// session's limits.
func (p *Progress) apply(e Event, it *Iteration, n int, l Limits) {
	p.watchForStuck(e, it, l)
	switch d := e.Data.(type) {
	case *ToolFinished:
		if len(d.Modified) > 0 {
			p.Modified = append(p.Modified, d.Modified...)
			p.LastModifiedIteration = n
		}
	case *MessageAdded:
		if d.Key != "" {
			if p.LimitWarnings == nil {
				p.LimitWarnings = map[string]bool{}
			}
			p.LimitWarnings[d.Key] = true
		}
	case *StuckDetected:
		p.StuckDetections++
	case *Warning:
		p.Warnings = append(p.Warnings, *d)
	}
}
