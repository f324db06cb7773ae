package storetest

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/model"
	"github.com/agentloop/agentloop/tool"
)

// FakeEvent returns event seq of a synthetic session log, a pure function of
// (sessionID, seq): tests that crash a writer can check exactly what was
// stored, and benchmarks get payloads of realistic sizes. Event 1 is
// session.started; then each iteration is five events — iteration.started,
// model.responded (a few hundred bytes of text and one tool call),
// tool.started, tool.finished (0.5–3 KB of output) and iteration.ended —
// about 2.5 KB of JSON per iteration.
func FakeEvent(sessionID string, seq int64) loop.Event {
	h := fnv.New64a()
	fmt.Fprintf(h, "%s/%d", sessionID, seq)
	rng := rand.New(rand.NewPCG(h.Sum64(), uint64(seq)))
	// Times are microseconds apart so that every store keeps them exactly.
	at := fakeEpoch.Add(time.Duration(seq)*time.Second + time.Duration(rng.IntN(1e6))*time.Microsecond)
	if seq == 1 {
		return loop.NewEvent(sessionID, seq, at, &loop.SessionStarted{
			Task:         "Fix the failing tests in " + sessionID + ": " + words(rng, 20),
			SystemPrompt: "You are a careful coding agent. " + words(rng, 60),
			Model:        "ollama/qwen3:8b",
			Mode:         loop.ModeTools,
			Tools:        []string{"read_file", "write_file", "shell", "plan"},
			Limits:       loop.Limits{MaxIterations: 50, BudgetTokens: 200000},
			Workspace:    "/work/" + sessionID,
		})
	}
	k := seq - 2
	iter := int(k/5) + 1
	callID := fmt.Sprintf("call_%d_%d", iter, rng.IntN(1000))
	args, _ := json.Marshal(map[string]string{"path": fmt.Sprintf("src/pkg%d/file_%d.go", iter%7, rng.IntN(100))})
	var p loop.Payload
	switch k % 5 {
	case 0:
		p = &loop.IterationStarted{N: iter}
	case 1:
		p = &loop.ModelResponded{
			Iteration:    iter,
			Text:         words(rng, 40+rng.IntN(80)),
			ToolCalls:    []model.ToolCall{{ID: callID, Name: "read_file", Arguments: args}},
			FinishReason: model.FinishToolCalls,
			Usage:        model.Usage{InputTokens: 1000 + rng.IntN(4000), OutputTokens: 50 + rng.IntN(300)},
			CostUSD:      float64(rng.IntN(1000)) / 1e5,
			DurationMS:   int64(500 + rng.IntN(5000)),
			Format:       "native",
		}
	case 2:
		p = &loop.ToolStarted{Iteration: iter, CallID: callID, Name: "read_file", Input: args}
	case 3:
		p = &loop.ToolFinished{
			Iteration:  iter,
			CallID:     callID,
			Name:       "read_file",
			Output:     words(rng, 80+rng.IntN(400)),
			DurationMS: int64(rng.IntN(200)),
			Modified:   []tool.Modification{{Path: "src/main.go", Kind: tool.Changed}},
		}
	default:
		p = &loop.IterationEnded{N: iter, Status: loop.IterationCompleted}
	}
	return loop.NewEvent(sessionID, seq, at, p)
}

// FakeEvents returns events from..to (inclusive) of a synthetic log.
func FakeEvents(sessionID string, from, to int64) []loop.Event {
	out := make([]loop.Event, 0, max(0, to-from+1))
	for seq := from; seq <= to; seq++ {
		out = append(out, FakeEvent(sessionID, seq))
	}
	return out
}

var fakeEpoch = time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)

var vocabulary = strings.Fields(`the test fails because handler returns nil when config is missing
so we read file and check error path then patch function add case for empty input run go
test again output shows panic index out of range in parser loop fix bound update docs
func return err if len ctx context value struct field map slice string int byte json decode`)

func words(rng *rand.Rand, n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(vocabulary[rng.IntN(len(vocabulary))])
	}
	return b.String()
}
