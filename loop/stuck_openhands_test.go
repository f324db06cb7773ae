package loop_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/model"
	"github.com/agentloop/agentloop/tool"
)

// history builds a session's log the way OpenHands' stuck tests build an
// event history: each action with its observation is one iteration (a
// model reply calling one tool, then the result), a person's message is a
// message.added, a condensation a conversation.condensed.
type history struct {
	evs []loop.Payload
	n   int
}

// obs is one observation: what the tool returned and the record's other
// fields, which the model never sees.
type obs struct {
	out      string
	isError  bool // the result reports an error (a failed command's exit code)
	failed   bool // the tool could not do the call (OpenHands' ErrorObservation)
	duration int64
	modified []tool.Modification
}

func (h *history) call(name, args string, o obs) *history {
	h.n++
	id := fmt.Sprintf("call_%d", h.n) // a different id each time, as OpenHands' command_id
	h.evs = append(h.evs,
		&loop.IterationStarted{N: h.n},
		&loop.ModelResponded{Iteration: h.n, ToolCalls: []model.ToolCall{{ID: id, Name: name, Arguments: []byte(args)}}},
		&loop.ToolStarted{Iteration: h.n, CallID: id, Name: name, Input: []byte(args)},
		&loop.ToolFinished{Iteration: h.n, CallID: id, Name: name, Output: o.out, IsError: o.isError || o.failed, Failed: o.failed,
			DurationMS: o.duration, Modified: o.modified},
		&loop.IterationEnded{N: h.n, Status: loop.IterationCompleted})
	return h
}

func (h *history) cmd(command, out string) *history {
	return h.call("execute_command", fmt.Sprintf(`{"command":%q}`, command), obs{out: out, duration: int64(h.n * 7)})
}

func (h *history) read(path, out string) *history {
	return h.call("read_file", fmt.Sprintf(`{"path":%q}`, path), obs{out: out, duration: int64(h.n)})
}

func (h *history) say(text string) *history {
	h.n++
	h.evs = append(h.evs, &loop.IterationStarted{N: h.n}, &loop.ModelResponded{Iteration: h.n, Text: text},
		&loop.IterationEnded{N: h.n, Status: loop.IterationCompleted})
	return h
}

func (h *history) user(text string) *history {
	h.evs = append(h.evs, &loop.MessageAdded{Role: model.RoleUser, Content: text, Kind: loop.KindUser})
	return h
}

func (h *history) condensed() *history {
	h.evs = append(h.evs, &loop.ConversationCondensed{TokensBefore: 9000, TokensAfter: 8000, DroppedFrom: 1, DroppedTo: 2,
		Summary: "Trimming prompt to meet context window limitations"})
	return h
}

func (h *history) times(k int, f func(h *history, i int)) *history {
	for i := range k {
		f(h, i)
	}
	return h
}

// verdict folds the history into a session's state, headless or not, and
// asks stuck detection.
func (h *history) verdict(t *testing.T, headless bool) string {
	t.Helper()
	at := time.Unix(0, 0)
	evs := []loop.Event{loop.NewEvent("s", 1, at, &loop.SessionStarted{Task: "x", Limits: loop.Limits{StuckHeadless: headless}})}
	for _, p := range h.evs {
		evs = append(evs, loop.NewEvent("s", int64(len(evs)+1), at, p))
	}
	st, err := loop.Fold(evs)
	if err != nil {
		t.Fatal(err)
	}
	// A snapshot taken here and restored judges the same.
	b, err := st.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	back, err := loop.RestoreState(b)
	if err != nil {
		t.Fatal(err)
	}
	pattern, _, _, _ := st.DetectStuck()
	if again, _, _, _ := back.DetectStuck(); again != pattern {
		t.Fatalf("the restored snapshot judges %q, the fold %q", again, pattern)
	}
	return pattern
}

// jupyter is the two lines OpenHands' IPython observations end with.
const jupyter = "\n[Jupyter current working directory: /workspace]\n[Jupyter Python interpreter: /usr/bin/python]"

const editCode = "edit_file_by_replace(\n    'book_store.py',\n    to_replace=\"\"\"def total(basket):\n    if not basket:\n        return 0\n"

// syntaxErrors is OpenHands' _impl_syntax_error_events: the same edit
// failing with errorMessage, at a varying line (randomLine) or line 42.
func syntaxErrors(h *history, errorMessage string, randomLine bool, incidents int) *history {
	return h.times(incidents, func(h *history, i int) {
		line, extra := "42", ""
		if randomLine {
			line, extra = fmt.Sprint((i+1)*10), strings.Repeat("\n", i+1)
		}
		h.call("run_python", fmt.Sprintf(`{"code":%q}`, editCode), obs{duration: int64(i), out: "  Cell In[1], line " + line +
			"\nto_replace=\"\"\"def largest(min_factor, max_factor):\n            ^\n" + errorMessage + extra + jupyter})
	})
}

// unterminated is OpenHands' _impl_unterminated_string_error_events.
func unterminated(h *history, randomLine bool, incidents int) *history {
	return h.times(incidents, func(h *history, i int) {
		line := "1"
		if randomLine {
			line = fmt.Sprint((i + 1) * 10)
		}
		h.call("run_python", fmt.Sprintf(`{"code":%q}`, editCode), obs{duration: int64(i), out: `print("  Cell In[1], line ` + line +
			"\nhello\n       ^\nSyntaxError: unterminated string literal (detected at line " + line + ")" + jupyter})
	})
}

// TestStuckAgreesWithOpenHands ports the scenarios of OpenHands'
// tests/unit/controller/test_is_stuck.py (each case names its source test)
// and holds agentloop's verdict to OpenHands' one. OpenHands' "headless"
// mode is Limits.StuckHeadless; its interactive mode is agentloop's
// default. The scenarios are about what the model saw: every call gets a
// new id and duration, which OpenHands' command_id mirrors.
func TestStuckAgreesWithOpenHands(t *testing.T) {
	const (
		none        = ""
		pair        = loop.PatternRepeatedPair
		errs        = loop.PatternRepeatedError
		monologue   = loop.PatternRepeatedMessage
		alternation = loop.PatternAlternation
		failing     = loop.PatternFailedIterations
		condensing  = loop.PatternCondensationLoop
	)
	ls4 := func() *history {
		return new(history).times(4, func(h *history, i int) { h.cmd("ls", "") })
	}
	alternating := func() *history {
		h := new(history).user("Come on")
		for range 2 {
			h.cmd("ls", "file1.txt\nfile2.txt").read("file1.txt", "File content")
		}
		return h.user("Come on").cmd("ls", "file1.txt\nfile2.txt").read("file1.txt", "File content")
	}
	notFound := func(h *history, text string) *history {
		return h.call("execute_command", `{"command":"invalid_command"}`, obs{out: text, failed: true})
	}
	tests := []struct {
		source   string // the OpenHands test
		name     string
		h        *history
		headless bool
		want     string
	}{
		{"test_history_too_short", "one command", new(history).user("Hello").cmd("ls", "file1.txt\nfile2.txt"), true, none},

		{"test_interactive_mode_resets_after_user_message", "4 × ls, headless", ls4(), true, pair},
		{"test_interactive_mode_resets_after_user_message", "4 × ls, interactive", ls4(), false, pair},
		{"test_interactive_mode_resets_after_user_message", "a person's message, interactive", ls4().user("Hello"), false, none},
		{"test_interactive_mode_resets_after_user_message", "a person's message, headless", ls4().user("Hello"), true, pair},
		{"test_interactive_mode_resets_after_user_message", "2 more after it, interactive", ls4().user("Hello").cmd("ls", "").cmd("ls", ""), false, none},
		{"test_interactive_mode_resets_after_user_message", "4 after it, interactive", ls4().user("Hello").times(4, func(h *history, _ int) { h.cmd("ls", "") }), false, pair},

		{"test_is_stuck_repeating_action_observation", "2 × ls, a message", new(history).say("Hello").cmd("ls", "").cmd("ls", "").user("Done"), true, none},
		{"test_is_stuck_repeating_action_observation", "3 × ls", new(history).say("Hello").cmd("ls", "").cmd("ls", "").user("Done").cmd("ls", ""), true, none},
		{"test_is_stuck_repeating_action_observation", "4 × ls across a message", new(history).say("Hello").cmd("ls", "").cmd("ls", "").user("Done").cmd("ls", "").cmd("ls", ""), true, pair},

		{"test_is_stuck_repeating_action_error", "the same command cannot run, 4 different errors", func() *history {
			h := new(history).say("Hello")
			notFound(h, "Command not found")
			notFound(h, "Command still not found or another error")
			h.user("Done")
			notFound(h, "Different error")
			return notFound(h, "Command not found")
		}(), true, failing},

		{"test_is_stuck_invalid_syntax_error", "the same syntax error 4 times", syntaxErrors(new(history), "SyntaxError: invalid syntax. Perhaps you forgot a comma?", false, 4), true, pair},
		{"test_is_not_stuck_invalid_syntax_error_random_lines", "the error moves", syntaxErrors(new(history), "SyntaxError: invalid syntax. Perhaps you forgot a comma?", true, 4), true, none},
		{"test_is_not_stuck_invalid_syntax_error_only_three_incidents", "3 incidents, moving", syntaxErrors(new(history), "SyntaxError: invalid syntax. Perhaps you forgot a comma?", true, 3), true, none},
		{"test_is_stuck_incomplete_input_error", "the same incomplete input 4 times", syntaxErrors(new(history), "SyntaxError: incomplete input", false, 4), true, pair},
		{"test_is_not_stuck_incomplete_input_error", "incomplete input, moving", syntaxErrors(new(history), "SyntaxError: incomplete input", true, 4), true, none},
		{"test_is_not_stuck_ipython_unterminated_string_error_random_lines", "unterminated string, moving", unterminated(new(history), true, 4), true, none},
		{"test_is_not_stuck_ipython_unterminated_string_error_only_two_incidents", "unterminated string twice", unterminated(new(history), false, 2), true, none},
		{"test_is_stuck_ipython_unterminated_string_error", "unterminated string 4 times", unterminated(new(history), false, 4), true, pair},
		{"test_is_not_stuck_ipython_syntax_error_not_at_end", "the detected line and the output after it vary", func() *history {
			h := new(history)
			for _, v := range [][2]string{{"1", "This is some additional output"}, {"1", "Too much output here on and on"}, {"3", "Enough"}, {"2", "Last line of output"}} {
				h.call("run_python", `{"code":"print(\"hello"}`, obs{out: "print(\"hello\n       ^\nSyntaxError: unterminated string literal (detected at line " + v[0] + ")\n" + v[1]})
			}
			return h
		}(), true, none},

		{"test_is_stuck_repeating_action_observation_pattern", "A,B,A,B,A,B across a message, headless", alternating(), true, alternation},
		{"test_is_stuck_repeating_action_observation_pattern", "A,B,A,B,A,B across a message, interactive", alternating(), false, none},
		{"test_is_stuck_repeating_action_observation_pattern", "over ten steps, a message first, headless", func() *history {
			h := new(history).user("Please fix the build").cmd("go build ./...", "ok").read("go.mod", "module x").cmd("git status", "clean").read("a.go", "package a")
			return h.times(3, func(h *history, _ int) { h.cmd("ls", "file1.txt\nfile2.txt").read("file1.txt", "File content") })
		}(), true, alternation},
		{"test_is_stuck_not_stuck", "different calls, a repeated pair after a message", new(history).say("Hello").cmd("ls", "file1.txt\nfile2.txt").read("file1.txt", "File content").
			cmd("pwd", "/home/user").read("file2.txt", "Another file content").user("Done").cmd("pwd", "/home/user").read("file2.txt", "Another file content"), true, none},

		{"test_is_stuck_monologue", "the same reply 3 times", new(history).user("Hi there!").say("Hi there!").user("How are you?").cmd("echo 42", "42").
			times(3, func(h *history, _ int) { h.say("I'm doing well, thanks for asking.") }), true, monologue},
		{"test_is_stuck_monologue", "an observation between", new(history).user("Hi there!").say("Hi there!").user("How are you?").
			times(3, func(h *history, _ int) { h.say("I'm doing well, thanks for asking.") }).cmd("storybook", "OK, I was stuck, but no more.").
			times(2, func(h *history, _ int) { h.say("I'm doing well, thanks for asking.") }), true, none},

		{"test_is_stuck_context_window_error_loop", "ten condensations in a row", new(history).user("Hello").times(10, func(h *history, _ int) { h.condensed() }), true, condensing},
		{"test_is_not_stuck_context_window_error_with_other_events", "steps between the condensations", new(history).user("Hello").times(10, func(h *history, i int) {
			h.condensed()
			if i < 9 {
				h.cmd(fmt.Sprintf("ls %d", i), "file1.txt\nfile2.txt")
				if i%2 == 0 {
					h.read(fmt.Sprintf("file%d.txt", i), fmt.Sprintf("File content %d", i))
				}
			}
		}), true, none},
		{"test_is_not_stuck_context_window_error_less_than_ten", "nine condensations", new(history).user("Hello").times(9, func(h *history, _ int) { h.condensed() }), true, none},
		{"test_is_stuck_context_window_error_with_user_messages", "a person's messages between, headless", new(history).user("Hello").times(10, func(h *history, i int) {
			h.condensed()
			if i < 9 {
				h.user(fmt.Sprintf("Please continue %d", i))
			}
		}), true, condensing},
		{"test_is_not_stuck_context_window_error_in_non_headless", "then a person's message, headless", new(history).times(10, func(h *history, _ int) { h.condensed() }).user("Please continue"), true, condensing},
		{"test_is_not_stuck_context_window_error_in_non_headless", "then a person's message, interactive", new(history).times(10, func(h *history, _ int) { h.condensed() }).user("Please continue"), false, none},
	}
	for _, tt := range tests {
		t.Run(tt.source+"/"+tt.name, func(t *testing.T) {
			if got := tt.h.verdict(t, tt.headless); got != tt.want {
				t.Fatalf("%s (%s): got %q, want %q", tt.source, tt.name, got, tt.want)
			}
		})
	}
}

// The record's fields the model never sees — call ids, durations, the
// files a call touched — and identifiers that change on every run do not
// hide a loop; what the model saw changing does.
func TestStuckComparesWhatTheModelSaw(t *testing.T) {
	goTest := func(d string) string {
		return "exit code: 1\nstdout:\n--- FAIL: TestAdd (" + d + ")\n    add_test.go:9: got 3, want 4\nFAIL\nFAIL\texample.com/add\t" + d + "\n"
	}
	run := `{"command":"go test ./..."}`
	tests := []struct {
		name string
		h    *history
		want string
	}{
		{"same output, other durations and modifications", new(history).times(4, func(h *history, i int) {
			h.call("execute_command", `{"command":"make"}`, obs{out: "nothing to do", duration: int64(i * 1000), modified: []tool.Modification{{Kind: "modified", Path: fmt.Sprintf("build/%d.o", i)}}})
		}), loop.PatternRepeatedPair},
		{"same arguments in another key order", new(history).
			call("grep", `{"pattern":"x","path":"."}`, obs{out: "none"}).call("grep", `{"path":".","pattern":"x"}`, obs{out: "none"}).
			call("grep", `{ "pattern" : "x", "path" : "." }`, obs{out: "none"}).call("grep", `{"path":".","pattern":"x"}`, obs{out: "none"}), loop.PatternRepeatedPair},
		{"the same failing test, timings vary", new(history).times(3, func(h *history, i int) {
			h.call("execute_command", run, obs{out: goTest(fmt.Sprintf("0.0%ds", i+1)), isError: true})
		}), loop.PatternRepeatedError},
		{"the same error, a request id varies", new(history).times(3, func(h *history, i int) {
			h.call("http_get", `{"url":"http://localhost/api"}`, obs{out: fmt.Sprintf("HTTP 500 at 2026-11-29T04:5%d:13Z (request id: %d, trace 3f2a%04dbe11)", i, 1000+i, i), isError: true})
		}), loop.PatternRepeatedError},
		{"the same crash, pid and address vary", new(history).times(3, func(h *history, i int) {
			h.call("execute_command", `{"command":"./server"}`, obs{out: fmt.Sprintf("panic: nil map\n\ngoroutine %d [running]:\nmain.main()\n\t/src/main.go:12 +0x%x\nexit status 2 (pid %d)", i+1, 0x1d+i, 4242+i), isError: true})
		}), loop.PatternRepeatedError},
		{"a refusal whose position varies", new(history).times(3, func(h *history, i int) {
			h.call("write_file", `{"path":"a.go"}`, obs{out: fmt.Sprintf("invalid arguments: unexpected end of JSON input at offset %d", 10+i), failed: true})
		}), loop.PatternRepeatedError},
		{"the failing line moves: progress", new(history).times(3, func(h *history, i int) {
			h.call("execute_command", run, obs{out: fmt.Sprintf("exit code: 1\nstderr:\n./a.go:%d:2: syntax error\n", 3+4*i), isError: true})
		}), ""},
		{"the same output once an error, once not", new(history).times(4, func(h *history, i int) {
			h.call("execute_command", `{"command":"make"}`, obs{out: "done", isError: i == 3})
		}), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.h.verdict(t, false); got != tt.want {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
}
