package loop

import "time"

// Header is what a session is — as session.started recorded it — and how
// it stands: its status, its outcome once it stopped, its times.
type Header struct {
	ID           string `json:"id"`
	Task         string `json:"task"`
	SystemPrompt string `json:"system_prompt,omitempty"`
	Model        string `json:"model,omitempty"`
	// CurrentModel is the model the session calls now: Model until a
	// model.switched moved it to one of FallbackModels.
	CurrentModel   string            `json:"current_model,omitempty"`
	FallbackModels []string          `json:"fallback_models,omitempty"`
	Mode           Mode              `json:"mode"`
	Marker         string            `json:"marker,omitempty"`
	Tools          []string          `json:"tools,omitempty"`
	Workspace      string            `json:"workspace,omitempty"`
	Labels         map[string]string `json:"labels,omitempty"`
	Verify         []string          `json:"verify,omitempty"`
	Endpoint       string            `json:"endpoint,omitempty"`
	Approval       string            `json:"approval,omitempty"`
	Profile        string            `json:"profile,omitempty"`
	Limits         Limits            `json:"limits"`
	Status         Status            `json:"status"`
	// MaxIterations is the iteration limit in force.
	MaxIterations int       `json:"max_iterations"`
	StartedAt     time.Time `json:"started_at,omitzero"`
	CompletedAt   time.Time `json:"completed_at,omitzero"`
	Duration      Duration  `json:"duration"`

	// Outcome, once the session ended or paused.
	Reason  StopReason `json:"reason,omitempty"`
	Detail  string     `json:"detail,omitempty"`
	Answer  string     `json:"answer,omitempty"`
	Partial bool       `json:"partial,omitempty"`
	// Question is what a waiting session asks.
	Question string `json:"question,omitempty"`

	// ForkedFrom names the session and step this one was forked from.
	ForkedFrom *ForkedFrom `json:"forked_from,omitempty"`

	// Seq is the sequence number of the last applied event.
	Seq int64 `json:"seq"`
}

func (h *Header) apply(e Event) {
	switch d := e.Data.(type) {
	case *SessionStarted:
		h.ID = e.SessionID
		h.Task, h.SystemPrompt, h.Model, h.Mode = d.Task, d.SystemPrompt, d.Model, d.Mode
		h.Marker, h.Tools, h.Workspace, h.Labels, h.Limits = d.Marker, d.Tools, d.Workspace, d.Labels, d.Limits
		h.Verify, h.Endpoint, h.Approval, h.Profile = d.Verify, d.Endpoint, d.Approval, d.Profile
		h.ForkedFrom = d.ForkedFrom
		h.MaxIterations = d.Limits.maxIterations()
		h.CurrentModel, h.FallbackModels = d.Model, d.FallbackModels
		h.Status = StatusRunning
		h.StartedAt = e.Time
	case *ModelSwitched:
		h.CurrentModel = d.To
	case *SessionPaused:
		h.Status, h.Reason, h.Detail = StatusPaused, d.Reason, d.Detail
	case *SessionWaiting:
		h.Status, h.Reason, h.Question = StatusWaiting, d.Reason, d.Question
	case *SessionResumed:
		h.Status, h.Reason, h.Detail, h.Question = StatusRunning, "", "", ""
	case *SessionEnded:
		h.Status, h.Reason, h.Detail = d.Status, d.Reason, d.Detail
		h.Answer, h.Partial = d.Answer, d.Partial
		h.CompletedAt = e.Time
		h.Duration = Duration(e.Time.Sub(h.StartedAt))
	}
}

// nextModel is the fallback model after the current one, "" when none is left.
func (h *Header) nextModel() string {
	for i, m := range h.FallbackModels {
		if m == h.CurrentModel {
			if i+1 < len(h.FallbackModels) {
				return h.FallbackModels[i+1]
			}
			return ""
		}
	}
	if h.CurrentModel == h.Model && len(h.FallbackModels) > 0 {
		return h.FallbackModels[0]
	}
	return ""
}
