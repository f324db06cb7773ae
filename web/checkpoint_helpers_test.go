package web_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/agentloop/agentloop/assemble"
	"github.com/agentloop/agentloop/checkpoint"
	"github.com/agentloop/agentloop/model/price"
	"github.com/agentloop/agentloop/server"
	"github.com/agentloop/agentloop/service"
	"github.com/agentloop/agentloop/store/sqlite"
)

// newCheckpointBrowser is newBrowser on a server that keeps workspace
// checkpoints, as `agentloop serve` does: the service holds the
// checkpoint store (for fork and rewind) and its runner snapshots each
// session's workspace after the steps that changed it. They are kept in
// b.dir/checkpoints.
func newCheckpointBrowser(t *testing.T, approval string) *browser {
	t.Helper()
	return newBrowserWith(t, approval, func(cfg *server.Config) {
		st := cfg.Keys.(*sqlite.Store)
		cs := &checkpoint.Store{Root: filepath.Join(filepath.Dir(cfg.Defaults.Workspaces), "checkpoints")}
		resolver := &assemble.Resolver{OnWorkspace: cfg.Workspaces.Track}
		rc := resolver.RunnerConfig(st, price.Default())
		rc.Checkpoint = cs.Hook(nil)
		svc, err := service.New(service.Config{Store: st, Runner: rc, Checkpoints: cs})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { svc.Close() })
		cfg.Service = svc
	})
}

// sessionState is the part of GET /v1/sessions/{id} these tests read.
type sessionState struct {
	ID         string `json:"id"`
	Status     string `json:"status"`
	Workspace  string `json:"workspace"`
	ForkedFrom *struct {
		ID        string `json:"id"`
		Iteration int    `json:"iteration"`
	} `json:"forked_from"`
	Iterations []struct {
		Number  int  `json:"number"`
		Rewound bool `json:"rewound"`
	} `json:"iterations"`
	Messages []struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	} `json:"messages"`
}

func readState(t *testing.T, url, id string) sessionState {
	t.Helper()
	resp, err := http.Get(url + "/v1/sessions/" + id)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var s sessionState
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
		t.Fatal(err)
	}
	return s
}

// waitEnded waits until the API says session id has ended and returns
// its state.
func waitEnded(t *testing.T, url, id string) sessionState {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		s := readState(t, url, id)
		switch s.Status {
		case "completed", "failed", "terminated", "error":
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("session %s is still %s", id, s.Status)
		}
	}
}

// post sends a JSON body and decodes the answer, failing on any status
// but want.
func post(t *testing.T, url, body string, want int, into any) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		t.Fatalf("POST %s: %d, want %d: %s", url, resp.StatusCode, want, raw)
	}
	if into != nil {
		if err := json.Unmarshal(raw, into); err != nil {
			t.Fatalf("POST %s: %v: %s", url, err, raw)
		}
	}
}

// files reads every regular file of a workspace (its name relative to
// dir, its content).
func files(t *testing.T, dir string) map[string]string {
	t.Helper()
	got := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		got[filepath.ToSlash(rel)] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func sameFiles(got, want map[string]string) bool {
	if len(got) != len(want) {
		return false
	}
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			return false
		}
	}
	return true
}

// eval runs an expression in the page and returns its value.
func eval[T any](b *browser, js string) T {
	b.t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[T](js))
	if err != nil {
		b.fail(err)
	}
	return v
}

// waitJS waits until a boolean expression holds in the page.
func (b *browser) waitJS(what, js string) {
	b.t.Helper()
	for deadline := time.Now().Add(15 * time.Second); !eval[bool](b, js); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			b.fail(fmt.Errorf("never: %s (%s)", what, js))
		}
	}
}

// The original session of the fork tests: four steps that write and
// rewrite files, then an answer.
const originalScript = `{"tool_calls":[{"name":"write_file","arguments":{"path":"a.txt","content":"one\n"}}]}`

func originalSteps() []string {
	return []string{
		originalScript,
		`{"tool_calls":[{"name":"write_file","arguments":{"path":"b.txt","content":"two\n"}}]}`,
		`{"tool_calls":[{"name":"write_file","arguments":{"path":"a.txt","content":"one\nthree\n"}}]}`,
		`{"tool_calls":[{"name":"execute_command","arguments":{"command":"rm b.txt"}}]}`,
		`{"text":"Wrote a.txt and removed b.txt."}`,
	}
}

// repeating writes a scripted model whose steps play in a loop. A fork
// of an even step with it replies the same whether its script starts at
// its first step or skips the replies the copied log already holds.
func (b *browser) repeating(steps ...string) string {
	path := filepath.Join(b.dir, fmt.Sprintf("repeat-%d.json", time.Now().UnixNano()))
	if err := os.WriteFile(path, []byte(`{"repeat":true,"steps":[`+strings.Join(steps, ",")+`]}`), 0o600); err != nil {
		b.t.Fatal(err)
	}
	return "script:" + path
}
