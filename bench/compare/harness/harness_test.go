package harness

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentloop/agentloop/bench/compare/chatwire"
	"github.com/agentloop/agentloop/bench/compare/fake"
	"github.com/agentloop/agentloop/bench/compare/workload"
)

// fakeContender does the work without a server: K adds, then the answer.
func fakeContender(final string, calls int) Contender {
	return Contender{Name: "fake", New: func(context.Context, Env) (*Runtime, error) {
		return &Runtime{Run: func(ctx context.Context) (string, error) {
			for range calls {
				if _, err := workload.Add(ctx, 1, 2); err != nil {
					return "", err
				}
			}
			time.Sleep(time.Millisecond)
			return final, nil
		}}, nil
	}}
}

func TestModes(t *testing.T) {
	for _, mode := range []string{"seq", "conc"} {
		t.Run(mode, func(t *testing.T) {
			o := options{server: "http://127.0.0.1:1/v1", mode: mode, sessions: 20, warmup: 2, probe: time.Millisecond / 2, timeout: time.Minute, dir: t.TempDir()}
			res, err := run(fakeContender(workload.Final, workload.K), o)
			if err != nil {
				t.Fatal(err)
			}
			if res.Sessions != 20 || res.Iterations != 20*workload.Iterations || res.WallNs <= 0 || res.NsPerIter <= 0 || res.Failed != 0 {
				t.Fatalf("result %+v", res)
			}
			if mode == "conc" && (res.P50Ms <= 0 || res.SessionsPerSec <= 0 || res.PeakRSS <= 0) {
				t.Fatalf("result %+v", res)
			}
		})
	}
}

func TestFailsLoudly(t *testing.T) {
	cases := []struct {
		name  string
		c     Contender
		wants string
	}{
		{"too few calls", fakeContender(workload.Final, workload.K-1), "9 add calls"},
		{"wrong answer", fakeContender("done", workload.K), `"done"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := run(c.c, options{server: "x", mode: "seq", sessions: 3, timeout: time.Minute, dir: t.TempDir()})
			if err == nil || !strings.Contains(err.Error(), c.wants) {
				t.Fatalf("err %v; want one mentioning %s", err, c.wants)
			}
		})
	}
	// A failure in the measured part is reported with the result.
	n := 0
	flaky := Contender{Name: "flaky", New: func(context.Context, Env) (*Runtime, error) {
		return &Runtime{Run: func(ctx context.Context) (string, error) {
			n++
			if n == 5 {
				return "", errors.New("boom")
			}
			for range workload.K {
				_, _ = workload.Add(ctx, 1, 2)
			}
			return workload.Final, nil
		}}, nil
	}}
	res, err := run(flaky, options{server: "x", mode: "seq", sessions: 6, warmup: 1, timeout: time.Minute, dir: t.TempDir()})
	if err == nil || res == nil || res.Failed != 1 || res.Errors[0] != "boom" {
		t.Fatalf("res %+v err %v", res, err)
	}
}

// A runtime whose last commits cannot be awaited fails the part it was
// measuring: the warm-up, or the measured sessions (reported with the
// result), in both modes.
func TestSettleFailsLoudly(t *testing.T) {
	settling := func(failAt int) Contender {
		c := fakeContender(workload.Final, workload.K)
		build := c.New
		calls := 0
		c.New = func(ctx context.Context, env Env) (*Runtime, error) {
			rt, err := build(ctx, env)
			if err != nil {
				return nil, err
			}
			rt.Settle = func() error {
				calls++
				if calls == failAt {
					return errors.New("disk full")
				}
				return nil
			}
			return rt, nil
		}
		return c
	}
	o := options{server: "x", mode: "seq", sessions: 3, warmup: 1, timeout: time.Minute, dir: t.TempDir()}
	if _, err := run(settling(1), o); err == nil || !strings.Contains(err.Error(), "warm-up: waiting for the sessions' last commits: disk full") {
		t.Fatalf("settling the warm-up failed: err %v", err)
	}
	for _, mode := range []string{"seq", "conc"} {
		o.mode = mode
		res, err := run(settling(2), o)
		if err == nil || res == nil || res.Failed != 1 || !strings.Contains(res.Errors[0], "last commits: disk full") {
			t.Fatalf("%s: settling the measured sessions failed: res %+v err %v", mode, res, err)
		}
	}
}

func TestAddNeedsSession(t *testing.T) {
	if _, err := workload.Add(context.Background(), 1, 2); !errors.Is(err, workload.ErrNoSession) {
		t.Fatalf("err %v", err)
	}
}

// chatContender is a minimal loop over the fake server.
func chatContender() Contender {
	return Contender{Name: "chat", New: func(_ context.Context, env Env) (*Runtime, error) {
		return &Runtime{Run: func(ctx context.Context) (string, error) {
			req := &chatwire.Request{Model: workload.ModelName, Tools: []chatwire.Tool{{Type: "function", Function: chatwire.Function{Name: workload.ToolName, Parameters: json.RawMessage(workload.ToolSchema)}}},
				Messages: []chatwire.Message{{Role: "user", Content: chatwire.Str(workload.Prompt)}}}
			for {
				resp, err := chatwire.Post(ctx, env.HTTPClient, env.BaseURL+"/chat/completions", "", req)
				if err != nil {
					return "", err
				}
				msg := resp.Choices[0].Message
				if len(msg.ToolCalls) == 0 {
					return *msg.Content, nil
				}
				req.Messages = append(req.Messages, msg)
				for _, tc := range msg.ToolCalls {
					sum, err := workload.AddJSON(ctx, []byte(tc.Function.Arguments))
					if err != nil {
						return "", err
					}
					req.Messages = append(req.Messages, chatwire.Message{Role: "tool", ToolCallID: tc.ID, Content: chatwire.Str(strconv.Itoa(sum))})
				}
			}
		}}, nil
	}}
}

func TestHold(t *testing.T) {
	srv := httptest.NewServer(fake.New(time.Millisecond).Handler())
	defer srv.Close()
	o := options{server: srv.URL + "/v1", mode: "conc", sessions: 50, warmup: 2, hold: true, timeout: time.Minute, dir: t.TempDir()}
	res, err := run(chatContender(), o)
	if err != nil {
		t.Fatal(err)
	}
	if res.HeldAtProbe != 50 || res.HeapPerSession <= 0 || res.GoroutinesPerSession < 1 {
		t.Fatalf("result %+v", res)
	}
}
