package web_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/server"
	"github.com/agentloop/agentloop/service"
)

// On a server with a demo, the empty session list offers "Run the demo";
// the button starts the demo session and opens it, and the session runs to
// its answer. A server without a demo shows no button.
func TestRunTheDemoFromTheEmptyList(t *testing.T) {
	var b *browser
	b = newBrowserWith(t, "auto", func(cfg *server.Config) {
		svc := cfg.Service
		ws := cfg.Defaults.Workspaces
		cfg.Demo = func(ctx context.Context, c service.Caller) (string, error) {
			dir, err := os.MkdirTemp(ws, "demo-")
			if err != nil {
				return "", err
			}
			model := b.script(
				`{"text":"Planning.","tool_calls":[{"name":"update_plan","arguments":{"action":"create","goal":"Say hello","steps":["Write and run hello.sh"]}}]}`,
				`{"tool_calls":[{"name":"write_file","arguments":{"path":"hello.sh","content":"echo hello from the \"$1\"\n"}}]}`,
				`{"tool_calls":[{"name":"execute_command","arguments":{"command":"sh hello.sh demo"}}]}`,
				`{"tool_calls":[{"name":"update_plan","arguments":{"action":"update_step","step":1,"status":"completed"}}]}`,
				`{"tool_calls":[{"name":"update_plan","arguments":{"action":"complete"}}]}`,
				`{"text":"The demo is done."}`)
			s, err := svc.Start(ctx, c, loop.Task{Prompt: "The demo: write and run hello.sh", Model: model, Workspace: dir, Approval: "auto"})
			return s.ID, err
		}
	})
	b.run(chromedp.Navigate(b.url+"/#/"), chromedp.WaitVisible(chromedp.CSS("#run-demo")))
	if got := b.text("#empty"); !strings.Contains(got, "No sessions yet") || !strings.Contains(got, "Run the demo") {
		t.Errorf("the empty list: %q", got)
	}
	b.shot("demo-empty-list")
	b.run(click("#run-demo"), chromedp.WaitVisible(chromedp.CSS(status("completed"))))
	// The command's output (hello.sh itself does not hold the words).
	if got := b.text("main"); !strings.Contains(got, "The demo is done.") || !strings.Contains(got, "hello from the demo") {
		t.Errorf("the demo session's page: %.1500s", got)
	}
	b.shot("demo-session")
	// Back on the list the session is there and the offer is gone.
	b.run(chromedp.Navigate(b.url+"/#/"), chromedp.WaitVisible(chromedp.CSS("#sessions tr[data-id]")))
	if got := b.text("#sessions"); !strings.Contains(got, "completed") || b.text("#empty") != "" {
		t.Errorf("the list after the demo: %q", got)
	}

	plain := newBrowser(t, "auto")
	// data-demo is set once the page has the server's answer.
	plain.run(chromedp.Navigate(plain.url+"/#/"), chromedp.WaitVisible(chromedp.CSS(`#empty td[data-demo="none"]`)))
	if got := plain.text("#empty"); strings.Contains(got, "Run the demo") || !strings.Contains(got, "No sessions yet") {
		t.Errorf("a server without a demo: %q", got)
	}
	plain.shot("demo-not-offered")
}
