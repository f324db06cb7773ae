package web_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// `agentloop eval` run by the real binary into the dashboard's database:
// the Evals page lists the run and scores its models and tasks as the
// command does, each try linked to its session.
func TestEvalsPage(t *testing.T) {
	b := newBrowser(t, "auto")
	bin := filepath.Join(t.TempDir(), "agentloop")
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/agentloop").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	suite := filepath.Join(b.dir, "suite.yaml")
	os.WriteFile(suite, []byte(`
name: page
tasks:
  - name: write-done
    task: Write done.txt.
    verify: ["test -f done.txt"]
  - name: give-up
    task: Give up.
    expect: [failed]
`), 0o600)
	good := b.script(`{"tool_calls":[{"name":"write_file","arguments":{"path":"done.txt","content":"done"}}]}`, `{"text":"Wrote done.txt."}`)
	lazy := b.script(`{"text":"Done, trust me."}`)
	cmd := exec.Command(bin, "eval", suite, "--model", good, "--model", lazy, "--db", filepath.Join(b.dir, "s.db"), "--parallel", "1")
	cmd.Env = append(os.Environ(), "AGENTLOOP_SANDBOX=none", "AGENTLOOP_UNSAFE_NO_SANDBOX=1", "XDG_CONFIG_HOME="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("eval: %v\n%s", err, out)
	}

	b.run(chromedp.Navigate(b.url+"/#/evals"), chromedp.WaitVisible(chromedp.CSS("#eval-runs tr[data-run] a")))
	if rows := b.text("#eval-runs"); !strings.Contains(rows, "page") || !strings.Contains(rows, "4") {
		t.Errorf("runs: %q", rows)
	}
	b.run(click("#eval-runs tr[data-run] a"), chromedp.WaitVisible(chromedp.CSS("#eval-models")))
	b.shot("evals-run")
	models := b.text("#eval-models")
	// Neither model gives up when asked to: the good one passes one task
	// of two, the lazy one none (its "done" fails the check).
	if !strings.Contains(models, "1/250%") || !strings.Contains(models, "0/20%") {
		t.Errorf("model scores: %q", models)
	}
	if tries := b.text("#eval-tries"); strings.Count(tries, "not passed") != 3 || !strings.Contains(tries, "ended completed") {
		t.Errorf("tries: %q", tries)
	}
	b.run(click("#eval-tries a"), chromedp.WaitVisible(chromedp.CSS("#status")))
}
