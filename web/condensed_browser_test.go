package web_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// A long session run by the binary into the dashboard's database is
// condensed near its context window; the session page says where and how.
func TestPageShowsWhereTheSessionWasCondensed(t *testing.T) {
	b := newBrowser(t, "auto")
	bin := filepath.Join(t.TempDir(), "agentloop")
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/agentloop").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	var steps []string
	for i := range 6 {
		steps = append(steps, fmt.Sprintf(`{"tool_calls":[{"name":"execute_command","arguments":{"command":"seq 1 %d"}}]}`, 600+i))
	}
	model := b.script(append(steps, `{"text":"done"}`)...)
	cmd := exec.Command(bin, "run", "--db", filepath.Join(b.dir, "s.db"), "--yes", "--no-progress", "0", "--context-window", "6000",
		"--model", model, "--dir", t.TempDir(), "count")
	cmd.Env = append(os.Environ(), "AGENTLOOP_SANDBOX=none", "AGENTLOOP_UNSAFE_NO_SANDBOX=1", "XDG_CONFIG_HOME="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
	id := regexp.MustCompile(`Session ([0-9a-f]+) completed`).FindStringSubmatch(string(out))
	if id == nil {
		t.Fatalf("no session in:\n%s", out)
	}
	b.run(chromedp.Navigate(b.url+"/#/s/"+id[1]), chromedp.WaitVisible(chromedp.CSS("#condensed li")))
	got := b.text("#condensed")
	if !regexp.MustCompile(`before step \d+: \d+ → \d+ tokens`).MatchString(got) || !strings.Contains(got, "old tool output cut") {
		t.Errorf("condensed card: %q", got)
	}
	b.shot("session-condensed")
}
