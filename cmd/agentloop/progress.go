package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/model"
)

// progress shows a session's events as they become durable: a redrawn
// status line on a terminal, plain lines otherwise.
//
// Streamed output (delta) arrives live, ahead of the durable events: it
// is shown only when it belongs to the step on display (live says which
// step's model call is running; without it, while the step on display
// waits for its reply), so a later call's output never shows under an
// earlier step. Before the first step starts there is no status line.
type progress struct {
	mu       sync.Mutex
	w        io.Writer
	tty      bool
	max      int
	step     int
	awaiting bool // the model call of step is on display and has not replied
	live     func() int
	activity string
	lastLen  int
	quiet    bool
	inputs   map[string]json.RawMessage
}

func newProgress(w io.Writer, tty bool, maxIter int) *progress {
	return &progress{w: w, tty: tty, max: stepLimit(maxIter)}
}

// stepLimit is the step limit in force: a session whose limits do not
// say has the loop's default.
func stepLimit(n int) int {
	if n <= 0 {
		return loop.DefaultMaxIterations
	}
	return n
}

func (p *progress) event(e loop.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.quiet {
		return
	}
	switch d := e.Data.(type) {
	case *loop.SessionStarted:
		p.max = stepLimit(d.Limits.MaxIterations)
		p.line(fmt.Sprintf("session %s · %s · up to %d steps", e.SessionID, orDefault(d.Model, "default model"), p.max))
	case *loop.IterationStarted:
		p.step, p.awaiting = d.N, true
		p.statusLocked("thinking")
	case *loop.ModelResponded:
		p.awaiting = false
		if d.WrapUp {
			p.line("final answer after the limit")
			return
		}
		if t := strings.TrimSpace(d.Text); t != "" && len(d.ToolCalls) > 0 {
			p.line(fmt.Sprintf("step %d: %s", d.Iteration, oneLine(t, 100)))
		}
		if len(d.ToolCalls) > 0 {
			names := make([]string, len(d.ToolCalls))
			for i, c := range d.ToolCalls {
				names[i] = c.Name
			}
			p.statusLocked("calling " + strings.Join(names, ", "))
		}
	case *loop.ToolStarted:
		if p.inputs == nil {
			p.inputs = map[string]json.RawMessage{}
		}
		p.inputs[d.CallID] = d.Input
		p.statusLocked(fmt.Sprintf("%s %s", d.Name, argsSummary(d.Input)))
	case *loop.ToolFinished:
		mark := "ok"
		if d.IsError {
			mark = "error: " + oneLine(strings.TrimPrefix(d.Output, "error: "), 80)
		}
		p.line(fmt.Sprintf("step %d: %s %s → %s (%d ms)", d.Iteration, d.Name, argsSummary(p.inputOf(d)), mark, d.DurationMS))
	case *loop.StuckDetected:
		p.line(fmt.Sprintf("stuck (%s): %s → %s", d.Pattern, d.Detail, d.Action))
	case *loop.Warning:
		p.line("warning: " + d.Message)
	case *loop.SessionPaused:
		p.line(fmt.Sprintf("paused (%s) %s", d.Reason, d.Detail))
	case *loop.SessionWaiting:
		p.line(fmt.Sprintf("waiting (%s): %s", d.Reason, d.Question))
	case *loop.SessionEnded:
		p.line(fmt.Sprintf("%s (%s) %s", d.Status, d.Reason, d.Detail))
	}
}

// inputOf returns the input shown when the call started (finished events
// do not repeat it).
func (p *progress) inputOf(d *loop.ToolFinished) json.RawMessage {
	in := p.inputs[d.CallID]
	delete(p.inputs, d.CallID)
	return in
}

func (p *progress) delta(_ string, d model.Delta) {
	if !p.tty {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.step == 0 || (p.live == nil && !p.awaiting) || (p.live != nil && p.live() != p.step) {
		return // a call whose step is not on display (yet)
	}
	if d.ToolName != "" {
		p.statusLocked("writing call " + d.ToolName)
	} else if d.Text != "" && !strings.HasPrefix(p.activity, "writing") {
		p.statusLocked("writing")
	}
}

func (p *progress) statusLocked(s string) {
	p.activity = safeText(s)
	if !p.tty || p.quiet || p.step == 0 {
		return
	}
	p.draw()
}

func (p *progress) draw() {
	bar := bar(p.step, p.max, 10)
	line := fmt.Sprintf("Step %d/%d %s running · %s", p.step, p.max, bar, oneLine(p.activity, 60))
	pad := p.lastLen - utf8.RuneCountInString(line)
	fmt.Fprintf(p.w, "\r%s%s", line, strings.Repeat(" ", max(pad, 0)))
	p.lastLen = utf8.RuneCountInString(line)
}

// line prints a permanent line (above the status line on a terminal).
func (p *progress) line(s string) {
	if p.tty && p.lastLen > 0 {
		fmt.Fprintf(p.w, "\r%s\r", strings.Repeat(" ", p.lastLen))
		p.lastLen = 0
	}
	fmt.Fprintf(p.w, "%s %s\n", time.Now().Format("15:04:05"), safeText(s))
	if p.tty && p.activity != "" && p.step > 0 {
		p.draw()
	}
}

// follow shows the streamed output of sess's model calls under their
// steps.
func (p *progress) follow(sess *loop.Session) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.live = sess.Calling
}

func (p *progress) done() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tty && p.lastLen > 0 {
		fmt.Fprintf(p.w, "\r%s\r", strings.Repeat(" ", p.lastLen))
		p.lastLen = 0
	}
	p.activity = ""
}

func bar(n, total, width int) string {
	if total <= 0 {
		total = 1
	}
	full := min(n*width/total, width)
	return "▕" + strings.Repeat("█", full) + strings.Repeat("░", width-full) + "▏"
}

// argsSummary shows the most telling argument of a call: a path or command.
func argsSummary(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var m map[string]any
	if json.Unmarshal(raw, &m) != nil {
		return oneLine(string(raw), 60)
	}
	for _, k := range []string{"path", "command", "pattern", "query", "key", "action", "url"} {
		if v, ok := m[k].(string); ok {
			return oneLine(v, 60)
		}
	}
	return oneLine(string(raw), 60)
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) > n {
		r := []rune(s)
		return string(r[:n-1]) + "…"
	}
	return s
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}
