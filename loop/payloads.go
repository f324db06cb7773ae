package loop

import (
	"encoding/json"
	"time"

	"github.com/agentloop/agentloop/model"
	"github.com/agentloop/agentloop/tool"
)

// SessionStarted opens a log. It records everything needed to rebuild and
// continue the session after a restart.
type SessionStarted struct {
	Task         string            `json:"task"`
	SystemPrompt string            `json:"system_prompt,omitempty"`
	Model        string            `json:"model,omitempty"`
	Mode         Mode              `json:"mode"`
	Tools        []string          `json:"tools,omitempty"`
	Limits       Limits            `json:"limits"`
	Workspace    string            `json:"workspace,omitempty"`
	Marker       string            `json:"marker,omitempty"`
	Labels       map[string]string `json:"labels,omitempty"`
	// Verify lists the session's verification commands, so a resumed
	// session checks its work the same way.
	Verify []string `json:"verify,omitempty"`
	// Messages is the caller's conversation the session started from,
	// instead of Task alone (Task is then its last user message).
	Messages []model.Message `json:"messages,omitempty"`
	// Endpoint is the model API's base URL when not the provider's usual
	// one (never with credentials), Approval how tool calls were approved
	// ("auto", "ask" or "profile") and Profile the config profile: what a
	// resumed or recovered session needs to run the same way.
	Endpoint string `json:"endpoint,omitempty"`
	Approval string `json:"approval,omitempty"`
	Profile  string `json:"profile,omitempty"`
	// Tenant owns the session: listing, watching and controlling it are
	// limited to callers of that tenant. Empty is the local tenant.
	Tenant string `json:"tenant,omitempty"`
	// Protocol is the protocol file the session follows, when it has one.
	Protocol string `json:"protocol,omitempty"`
	// ModelOptions are the provider settings the session runs with
	// (never credentials), so it runs the same way wherever it resumes.
	ModelOptions *ModelOptions `json:"model_options,omitempty"`
	// Sandbox is the backend the session's processes run under (landlock,
	// bwrap, none) and Network its network policy (none, full, or TCP
	// ports): a recovered session, or one on a Temporal worker, applies
	// the same rules. Empty: recorded before sandboxing, or by a program
	// that left it to the process resolving the session.
	Sandbox string `json:"sandbox,omitempty"`
	Network string `json:"network,omitempty"`
	// FallbackModels are the models, in order, the session moves to when
	// its current one keeps failing with errors a retry cannot fix
	// (model.switched).
	FallbackModels []string `json:"fallback_models,omitempty"`
	// AnswerSchema is the JSON Schema the final answer must match
	// (answer.go); empty for a free-form answer.
	AnswerSchema json.RawMessage `json:"answer_schema,omitempty"`

	// ForkedFrom is set on a session whose log starts as a copy of
	// another's up to the end of one of its iterations.
	ForkedFrom *ForkedFrom `json:"forked_from,omitempty"`
}

// ModelSwitched records that the session moved from one model to the
// next of its fallback models: the following calls go to To.
type ModelSwitched struct {
	Iteration int    `json:"iteration"`
	From      string `json:"from"`
	To        string `json:"to"`
	// Why is the failure that made the session move on.
	Why string `json:"why"`
}

// ModelOptions are provider settings recorded with a session.
type ModelOptions struct {
	// NumCtx is Ollama's context window (options.num_ctx).
	NumCtx int `json:"num_ctx,omitempty"`
	// StreamTools streams Ollama replies even when tools are offered.
	StreamTools bool `json:"stream_tools,omitempty"`
	// Thinking turns the model's reasoning on: low, medium, high or a
	// token budget (see provider.ParseThinking).
	Thinking string `json:"thinking,omitempty"`
}

// IterationStarted opens iteration N (1-indexed).
type IterationStarted struct {
	N int `json:"n"`
}

// ModelResponded records one complete model reply.
type ModelResponded struct {
	Iteration    int                    `json:"iteration"`
	Text         string                 `json:"text,omitempty"`
	ToolCalls    []model.ToolCall       `json:"tool_calls,omitempty"`
	Reasoning    []model.ReasoningBlock `json:"reasoning,omitempty"`
	FinishReason string                 `json:"finish_reason,omitempty"`
	Usage        model.Usage            `json:"usage"`
	CostUSD      float64                `json:"cost_usd,omitempty"`
	DurationMS   int64                  `json:"duration_ms"`
	// Format says where the tool calls came from: "native", or the text
	// format they were recovered from ("hermes", "json", …).
	Format string `json:"format,omitempty"`
	// WrapUp marks the final tool-less call made after a limit was hit.
	WrapUp bool `json:"wrap_up,omitempty"`
}

// ModelFailed records a model call that failed after the provider's retries.
type ModelFailed struct {
	Iteration int    `json:"iteration"`
	Error     string `json:"error"`
	Retryable bool   `json:"retryable,omitempty"`
	Timeout   bool   `json:"timeout,omitempty"`
	// Malformed: the provider's reply could not be read (garbage, an HTML
	// page, a stream cut short) — a provider fault, tried again.
	Malformed  bool  `json:"malformed,omitempty"`
	DurationMS int64 `json:"duration_ms"`
}

// ToolStarted is made durable before a tool runs.
type ToolStarted struct {
	Iteration int             `json:"iteration"`
	CallID    string          `json:"call_id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
}

// ToolFinished records a tool's result (or why it did not run).
type ToolFinished struct {
	Iteration  int                 `json:"iteration"`
	CallID     string              `json:"call_id"`
	Name       string              `json:"name"`
	Output     string              `json:"output"`
	IsError    bool                `json:"is_error,omitempty"`
	DurationMS int64               `json:"duration_ms"`
	Modified   []tool.Modification `json:"modified,omitempty"`
	// Refused is set when the call never ran: unknown tool, invalid
	// arguments, over the per-turn cap, budget, or denied approval.
	Refused bool `json:"refused,omitempty"`
	// Unknown is set when a crash interrupted the call and its outcome
	// cannot be known.
	Unknown bool `json:"unknown,omitempty"`
	// Failed is set when the tool could not do the call: it returned an
	// error, panicked, timed out or was stopped. A command that ran and
	// exited non-zero did not fail: its exit code is its result
	// (IsError tells the model it reports a failure).
	Failed bool `json:"failed,omitempty"`
	// Images are pictures the tool returned (an MCP server's screenshot),
	// kept with the result so a replay shows the model the same.
	Images []model.Image `json:"images,omitempty"`
}

// MessageKind says why a message was added to the conversation.
type MessageKind string

const (
	KindUser         MessageKind = "user"          // a person wrote it
	KindNudge        MessageKind = "nudge"         // stuck detection
	KindLimitWarning MessageKind = "limit_warning" // last iteration / budget
	KindCorrection   MessageKind = "correction"    // malformed tool call
	KindWrapUp       MessageKind = "wrap_up"       // final best-effort request
	KindContinue     MessageKind = "continue"      // self-reasoning / plan continuation
	KindVerification MessageKind = "verification"  // verify command results
)

// MessageAdded puts a message into the conversation the model sees.
type MessageAdded struct {
	Role    model.Role  `json:"role"`
	Content string      `json:"content"`
	Kind    MessageKind `json:"kind"`
	// Key identifies one-off messages (limit warnings) so they are sent once.
	Key string `json:"key,omitempty"`
}

// IterationEnded closes iteration N.
type IterationEnded struct {
	N      int             `json:"n"`
	Status IterationStatus `json:"status"`
	Error  string          `json:"error,omitempty"`
	// Answer is the final answer the iteration ended with, when it did:
	// the session settles it next (gate, verification, end) — after a
	// crash too, without asking the model again.
	Answer string `json:"answer,omitempty"`
}

// ApprovalRequested asks a person to approve a tool call.
type ApprovalRequested struct {
	CallID   string          `json:"call_id"`
	Name     string          `json:"name"`
	Input    json.RawMessage `json:"input"`
	ArgsHash string          `json:"args_hash"`
}

// ApprovalDecided records a person's decision on a tool call.
type ApprovalDecided struct {
	CallID   string `json:"call_id"`
	ArgsHash string `json:"args_hash"`
	Approved bool   `json:"approved"`
	Reason   string `json:"reason,omitempty"`
	// EditedInput replaces the arguments when the person edited them.
	EditedInput json.RawMessage `json:"edited_input,omitempty"`
	// ForSession allows the same tool with the same arguments for the
	// rest of the session (until revoked); Name and Input say what.
	ForSession bool            `json:"for_session,omitempty"`
	Name       string          `json:"name,omitempty"`
	Input      json.RawMessage `json:"input,omitempty"`
}

// PlanStep is one step of a plan.
type PlanStep struct {
	Title  string     `json:"title"`
	Status StepStatus `json:"status"`
	Result string     `json:"result,omitempty"`
	// CompletedAt is when the step was marked completed.
	CompletedAt time.Time `json:"completed_at,omitzero"`
}

// PlanUpdated replaces the plan.
type PlanUpdated struct {
	Goal   string     `json:"goal"`
	Status PlanStatus `json:"status"`
	Steps  []PlanStep `json:"steps"`
	Reason string     `json:"reason,omitempty"`
	// Current is the 1-based number of the step being worked on (the
	// first in progress, else the first not done); 0 when none is.
	Current int `json:"current_step,omitempty"`
}

// MemorySet sets (or, with Deleted, removes) a session memory entry.
type MemorySet struct {
	Key     string          `json:"key"`
	Value   json.RawMessage `json:"value,omitempty"`
	Deleted bool            `json:"deleted,omitempty"`
}

// StuckDetected records a repetition pattern and what was done about it.
type StuckDetected struct {
	Pattern string `json:"pattern"`
	Detail  string `json:"detail"`
	// Action is "nudge", "pause" or "end".
	Action string `json:"action"`
}

// SessionPaused stops the session at a safe point; it can be resumed.
type SessionPaused struct {
	Reason StopReason `json:"reason"`
	Detail string     `json:"detail,omitempty"`
}

// SessionWaiting stops the session until a person answers.
type SessionWaiting struct {
	Reason   StopReason `json:"reason"`
	Question string     `json:"question,omitempty"`
}

// SessionResumed continues a paused or waiting session.
type SessionResumed struct {
	Note string `json:"note,omitempty"`
}

// Warning is something a watcher should know that does not stop the session.
type Warning struct {
	Code    WarningCode `json:"code"`
	Message string      `json:"message"`
}

// SessionEnded closes the log.
type SessionEnded struct {
	Status Status     `json:"status"`
	Reason StopReason `json:"reason"`
	Detail string     `json:"detail,omitempty"`
	Answer string     `json:"answer,omitempty"`
	// Partial is true when the answer is a best-effort one after a limit.
	Partial bool `json:"partial,omitempty"`
	// AnswerJSON is a completed session's answer as the JSON value its
	// answer schema accepted.
	AnswerJSON json.RawMessage `json:"answer_json,omitempty"`
}

func (*SessionStarted) EventType() EventType    { return TypeSessionStarted }
func (*IterationStarted) EventType() EventType  { return TypeIterationStarted }
func (*ModelResponded) EventType() EventType    { return TypeModelResponded }
func (*ModelFailed) EventType() EventType       { return TypeModelFailed }
func (*ModelSwitched) EventType() EventType     { return TypeModelSwitched }
func (*ToolStarted) EventType() EventType       { return TypeToolStarted }
func (*ToolFinished) EventType() EventType      { return TypeToolFinished }
func (*MessageAdded) EventType() EventType      { return TypeMessageAdded }
func (*IterationEnded) EventType() EventType    { return TypeIterationEnded }
func (*ApprovalRequested) EventType() EventType { return TypeApprovalRequested }
func (*ApprovalDecided) EventType() EventType   { return TypeApprovalDecided }
func (*PlanUpdated) EventType() EventType       { return TypePlanUpdated }
func (*MemorySet) EventType() EventType         { return TypeMemorySet }
func (*StuckDetected) EventType() EventType     { return TypeStuckDetected }
func (*SessionPaused) EventType() EventType     { return TypeSessionPaused }
func (*SessionWaiting) EventType() EventType    { return TypeSessionWaiting }
func (*SessionResumed) EventType() EventType    { return TypeSessionResumed }
func (*Warning) EventType() EventType           { return TypeWarning }
func (*SessionEnded) EventType() EventType      { return TypeSessionEnded }

// Limits bound a session. Zero means "no limit" except MaxIterations,
// which always has a cap (DefaultMaxIterations when zero).
type Limits struct {
	MaxIterations       int      `json:"max_iterations"`
	Timeout             Duration `json:"timeout,omitempty"`
	ModelCallTimeout    Duration `json:"model_call_timeout,omitempty"`
	ToolCallTimeout     Duration `json:"tool_call_timeout,omitempty"`
	BudgetTokens        int      `json:"budget_tokens,omitempty"`
	BudgetUSD           float64  `json:"budget_usd,omitempty"`
	BudgetToolCalls     int      `json:"budget_tool_calls,omitempty"`
	MaxToolCallsPerTurn int      `json:"max_tool_calls_per_turn,omitempty"`
	NoProgressAfter     int      `json:"no_progress_after,omitempty"`
	// WrapUp makes one last tool-less call for a best-effort answer when a
	// limit ends the session. Nil means true.
	WrapUp *bool `json:"wrap_up,omitempty"`
	// OnStuck is "pause" (default) or "end": what a stuck detection does
	// after the nudge (or at once, with StuckNoNudge).
	OnStuck string `json:"on_stuck,omitempty"`
	// StuckErrorRepeats is how many times the same call with the same
	// error result means stuck (default 3); StuckRepeats the same for any
	// other result (default 4). A changing result is progress.
	StuckErrorRepeats int `json:"stuck_error_repeats,omitempty"`
	StuckRepeats      int `json:"stuck_repeats,omitempty"`
	// StuckNoNudge skips the first detection's nudge to the model and
	// applies OnStuck at once.
	StuckNoNudge bool `json:"stuck_no_nudge,omitempty"`
	// StuckHeadless keeps looking for repetition across a person's
	// messages, for unattended runs whose messages come from automation;
	// by default a person's message starts stuck detection afresh.
	StuckHeadless bool `json:"stuck_headless,omitempty"`
	// ContextTokens is the model's context window; near it the
	// conversation is condensed (zero: unknown, never condensed).
	ContextTokens int `json:"context_tokens,omitempty"`
	// Condense is how dropped turns are summarised when the conversation
	// nears the window: "digest" (the default: a list of the calls and
	// first lines, no model call) or "model" (a model writes a summary;
	// the digest if that call fails). CondenseModel is the model that
	// writes it (PROVIDER/NAME); empty: the session's own.
	Condense      string `json:"condense,omitempty"`
	CondenseModel string `json:"condense_model,omitempty"`
	// MaxOutputTokens caps each call's output (the request's max tokens).
	// Zero leaves it to the provider, or under a token or cost budget
	// DefaultMaxOutputTokens, so that a call's cost is bounded before it
	// is sent.
	MaxOutputTokens int `json:"max_output_tokens,omitempty"`
}

// StuckThresholds returns the repeat counts stuck detection uses: for a
// repeated error result and for any other repeated result.
func (l Limits) StuckThresholds() (errorRepeats, repeats int) {
	errorRepeats, repeats = 3, 4
	if l.StuckErrorRepeats > 1 {
		errorRepeats = l.StuckErrorRepeats
	}
	if l.StuckRepeats > 1 {
		repeats = l.StuckRepeats
	}
	return errorRepeats, repeats
}

// DefaultMaxIterations caps a session whose limits do not say.
const DefaultMaxIterations = 15

// Iteration profiles (seed 004).
var Profiles = map[string]int{"trivial": 5, "standard": 10, "complex": 20}

func (l Limits) maxIterations() int {
	if l.MaxIterations <= 0 {
		return DefaultMaxIterations
	}
	return l.MaxIterations
}

func (l Limits) wrapUp() bool { return l.WrapUp == nil || *l.WrapUp }
