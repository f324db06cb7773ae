package api

// ForkRequest is the body of POST /v1/sessions/{id}/fork: a new session
// from the session's log up to the end of step At and its workspace as
// that step left it. The answer is a Created, as a start's.
type ForkRequest struct {
	// At is the step whose end the fork starts from, from 1.
	At int `json:"at"`
	// Model, when given, is the model the fork runs with from there.
	Model string `json:"model,omitempty"`
	// Message, when given, is a person's message the fork's model reads
	// after step At's conversation.
	Message string `json:"message,omitempty"`
}

// ForkedFrom names the session and step a fork was made from.
type ForkedFrom struct {
	ID        string `json:"id"`
	Iteration int    `json:"iteration"`
}

// Comparison is GET /v1/sessions/compare?a=&b=: two sessions side by
// side, step by step, and the diff from a's final workspace to b's.
type Comparison struct {
	A     CompareSide   `json:"a"`
	B     CompareSide   `json:"b"`
	Steps []CompareStep `json:"steps"`
	// Files are the paths that differ: "added" (only b has it),
	// "modified", "deleted" (only a has it).
	Files []FileChange `json:"files"`
	// Diff is the unified diff from a's final workspace to b's.
	Diff string `json:"diff"`
	// DiffTruncated says Diff was cut at its size limit (Files is whole).
	DiffTruncated bool `json:"diff_truncated,omitempty"`
}

// CompareSide is one session's outcome and totals. Duration is a string
// of seconds, "1.5s".
type CompareSide struct {
	ID           string      `json:"id"`
	Task         string      `json:"task"`
	Model        string      `json:"model"`
	Status       string      `json:"status"`
	Reason       string      `json:"reason"`
	Answer       string      `json:"answer"`
	Steps        int         `json:"steps"`
	ToolCalls    int         `json:"tool_calls"`
	InputTokens  int         `json:"input_tokens"`
	OutputTokens int         `json:"output_tokens"`
	CostUSD      float64     `json:"cost_usd"`
	Duration     string      `json:"duration"`
	ForkedFrom   *ForkedFrom `json:"forked_from"`
	// Workspace says where the diff read this side's files: "directory"
	// (as they are now), "checkpoint" (the last one; the directory is
	// gone) or "none".
	Workspace string `json:"workspace"`
}

// CompareStep is step Number of each session; a side is null when that
// session has no such step.
type CompareStep struct {
	Number int       `json:"number"`
	A      *StepSide `json:"a"`
	B      *StepSide `json:"b"`
}

// StepSide is one step of one session. Duration is a string of seconds.
type StepSide struct {
	Status       string         `json:"status"`
	Model        string         `json:"model"`
	ToolCalls    []StepToolCall `json:"tool_calls"`
	InputTokens  int            `json:"input_tokens"`
	OutputTokens int            `json:"output_tokens"`
	CostUSD      float64        `json:"cost_usd"`
	Duration     string         `json:"duration"`
}

// StepToolCall is one tool call of a step.
type StepToolCall struct {
	ToolName string `json:"tool_name"`
	Status   string `json:"status"`
}
