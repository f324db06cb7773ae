package prompt

import (
	"strings"
	"testing"
)

func TestMessages(t *testing.T) {
	tests := []struct {
		name    string
		got     string
		want    []string
		notWant []string
	}{
		{"last iteration, tools mode", LastIteration(5, 5, ""),
			[]string{"IMPORTANT: This is iteration 5 of 5 maximum.", "final answer now", "without calling any tools"}, []string{"TASK_COMPLETE"}},
		{"last iteration, marker", LastIteration(5, 5, "TASK_COMPLETE:"),
			[]string{"iteration 5 of 5 maximum", "write TASK_COMPLETE: followed by the answer"}, []string{"without calling"}},
		{"past the last iteration", LastIteration(7, 5, ""), []string{"iteration 7 of 5", "final answer now"}, nil},
		{"one iteration left", LastIteration(4, 5, ""), []string{"iteration 4 of 5 maximum; 1 iteration remains"}, []string{"final answer now"}},
		{"two iterations left", LastIteration(3, 5, ""), []string{"2 iterations remain"}, nil},
		{"budget 80", BudgetWarning("token", 80), []string{"80% of the token budget", "Focus on finishing"}, []string{"next reply"}},
		{"budget 95", BudgetWarning("cost", 95), []string{"WARNING: 95% of the cost budget", "final answer in your next reply"}, nil},
		{"budget 100", BudgetWarning("cost", 100), []string{"100% of the cost budget", "next reply"}, nil},
		{"budget no kind", BudgetWarning("", 80), []string{"of the session budget"}, nil},
		{"stuck", StuckNudge("the same read_file call", "3 times with path a.go"),
			[]string{"You are repeating the same read_file call (3 times with path a.go)", "Try something different"}, nil},
		{"stuck no detail", StuckNudge("the same error", ""), []string{"repeating the same error without"}, []string{"()"}},
		{"wrap up", WrapUp("the iteration limit (20) was reached"),
			[]string{"STOP: the iteration limit (20) was reached, so you can no longer call tools.", "best final answer"}, nil},
		{"wrap up no reason", WrapUp(""), []string{"a session limit was reached"}, nil},
		{"correction", Correction(`tool "reed_file" does not exist`),
			[]string{`could not be used: tool "reed_file" does not exist.`, "JSON object of arguments"}, nil},
		{"unknown outcome", UnknownOutcome("execute_command"),
			[]string{"execute_command call was interrupted", "may or may not have taken effect", "not run again", "Check the current state"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if strings.TrimSpace(tt.got) != tt.got || strings.Contains(tt.got, "\n\n") {
				t.Errorf("message has stray whitespace: %q", tt.got)
			}
			if len(tt.got) > 400 {
				t.Errorf("message is %d bytes, keep it under 400: %q", len(tt.got), tt.got)
			}
			for _, w := range tt.want {
				if !strings.Contains(tt.got, w) {
					t.Errorf("message lacks %q: %q", w, tt.got)
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(tt.got, w) {
					t.Errorf("message contains %q: %q", w, tt.got)
				}
			}
		})
	}
}
