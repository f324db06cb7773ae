// Package scripted is a model.Model that plays a script of replies, for
// tests, demos and the CLI (--model script:PATH). It records every request
// it receives and reports steps that were never played, requests that came
// after the end, and requests that did not look as the script expected.
//
// In Go tests, build the script from steps:
//
//	m := scripted.Replies(
//		scripted.Call("read_file", `{"path":"main.go"}`).WithText("Let me look."),
//		scripted.Fail(&model.RetryableError{Err: errors.New("rate limited"), RetryAfter: time.Second}),
//		scripted.Text("Done.").WithExpect(scripted.Expect{LastMessageRole: model.RoleTool}),
//	)
//	// … run the loop with m …
//	if err := m.Err(); err != nil {
//		t.Error(err)
//	}
//
// Elsewhere, load a JSON script with Load and play it with New. Each Model
// has its own cursor over a shared, immutable Script; NewCompact skips
// request recording so that thousands of Models stay cheap.
//
// # Script format
//
// A script file is one JSON object. Unknown fields are errors.
//
//	{
//	  "description": "fix a failing Go test",   // optional, free text
//	  "repeat": false,                          // optional: loop the steps forever
//	  "stream_chunk": 0,                        // optional: default delta size in bytes
//	  "steps": [ … ]                            // required, at least one step
//	}
//
// Each step is one reply to one request, in order. A reply step has "text",
// "tool_calls" or both:
//
//	{
//	  "text": "Let me run the tests.",
//	  "tool_calls": [
//	    {"name": "execute_command", "arguments": {"command": "go test ./..."}}
//	  ],
//	  "finish_reason": "tool_calls",
//	  "usage": {"input_tokens": 120, "output_tokens": 30},
//	  "delay": "50ms",
//	  "stream_chunk": 8,
//	  "expect": {"last_message_role": "user"}
//	}
//
// Step fields:
//
//   - text: the assistant text ("" is a valid, empty reply).
//   - tool_calls: each has "name" (required), "arguments" (a JSON object,
//     default {}) and an optional "id". An id left out becomes
//     call_<n>_<i>: n is the 1-based number of the request being answered
//     (the step number, unless the script repeats) and i the 0-based index
//     of the call in the step. To script malformed arguments, give
//     "raw_arguments": a string sent verbatim instead of "arguments".
//   - finish_reason: one of stop, tool_calls, length, content_filter;
//     defaults to tool_calls when the step has tool calls, else stop.
//   - usage: input_tokens, output_tokens, cache_read_tokens,
//     cache_write_tokens. When left out the reply carries a deterministic
//     estimate, marked UsageEstimated: input = bytes of the request's
//     messages (content, tool call names and arguments) / 4, output = bytes
//     of the reply's text, tool call names and arguments / 4.
//   - delay: a Go duration ("50ms", "2s") waited before replying. A context
//     cancelled meanwhile makes Generate return ctx.Err() at once.
//   - stream_chunk: when Generate is given a StreamFunc, the text and then
//     each tool call's arguments are sent as deltas of at most this many
//     bytes (never splitting a UTF-8 character); the first delta of a tool
//     call carries its name. Zero (the default, unless the script sets
//     one) sends each text and each call's arguments as a single delta.
//
// An error step makes Generate fail. It may have "delay" and "expect" but
// nothing else:
//
//	{"error": {"kind": "retryable", "status": 429, "message": "rate limited", "retry_after": "2s"}}
//
// Kinds and what Generate returns:
//
//   - retryable: *model.RetryableError with RetryAfter from "retry_after"
//     (errors.Is(err, model.ErrRetryable)).
//   - timeout: an error wrapping model.ErrTimeout.
//   - malformed: an error wrapping model.ErrMalformed.
//   - fatal: a plain error.
//
// "status" (an HTTP status code) prefixes the message as "HTTP 429: …";
// "message" defaults to "scripted <kind> error"; "retry_after" is only
// allowed for retryable errors.
//
// "expect", on any step, checks the request that plays the step. Fields left
// out are not checked:
//
//	"expect": {
//	  "last_message_role": "tool",        // system, user, assistant or tool
//	  "last_message_contains": "ok",      // substring of the last message's content
//	  "tools_offered": ["read_file"],     // each must be among the request's tools
//	  "message_count": 5                  // exact number of messages
//	}
//
// A request that fails its expectation still takes the step; Generate
// returns an error such as
//
//	script examples/x.json step 3: expected last message role tool, got user
//
// which matches ErrExpectation, and Err reports it again later.
//
// # Playing
//
// Every request takes the next step, except one whose context is already
// done. After the last step of a non-repeating script Generate returns an
// error matching ErrPastEnd. Err sums up a run: expectation failures,
// requests past the end, and steps never played (ErrUnplayed, non-repeating
// scripts only). A Model is safe for concurrent use.
//
// Load errors name the file, the step (1-based) and the field:
//
//	examples/x.json: step 2: tool_calls[0]: arguments must be a JSON object
package scripted
