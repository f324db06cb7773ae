package web_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// browserAt opens headless Chromium on a server that is already running
// at url (the real binary, say).
func browserAt(t *testing.T, url, dir string) *browser {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromiumPath(t)), chromedp.NoSandbox, chromedp.WindowSize(1280, 900))
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); cancelA() })
	if err := chromedp.Do(ctx); err != nil {
		t.Fatal(err)
	}
	return &browser{t: t, url: url, dir: dir, ctx: ctx}
}

// The real `agentloop serve`, which keeps checkpoints by default: from
// the page, a finished session is rewound to step 1 (no message, so it is
// left paused), its files are step 1's, Resume runs it to its end again;
// then it is forked from step 2 with a message, and the fork completes
// in its own workspace while the original's stays as it ended.
func TestRewindAndForkOnTheRealServer(t *testing.T) {
	chromiumPath(t)
	s := &agentloopServe{t: t, exe: buildAgentloop(t), dir: t.TempDir(), addr: freeAddr(t)}
	// As a server's data directory would be: the sandbox user (when the
	// server runs as root) passes through to the workspaces.
	os.Chmod(filepath.Dir(s.dir), 0o711)
	os.Chmod(s.dir, 0o711)
	s.start()
	url := "http://" + s.addr
	b := browserAt(t, url, s.dir)

	script := filepath.Join(s.dir, "script.json")
	os.WriteFile(script, []byte(`{"steps":[`+strings.Join(originalSteps(), ",")+`]}`), 0o644)
	id := postSession(t, url, fmt.Sprintf(`{"task":"Write the notes","model":"script:%s"}`, script))
	st := waitEnded(t, url, id)
	if got := files(t, st.Workspace); !sameFiles(got, map[string]string{"a.txt": "one\nthree\n"}) {
		t.Fatalf("the session's workspace: %q", got)
	}

	b.run(chromedp.Navigate(url+"/#/s/"+id), chromedp.WaitVisible(chromedp.CSS(status("completed"))),
		click(`[data-rewind="1"]`), chromedp.WaitVisible(chromedp.CSS("#rewind-files")))
	if got := eval[string](b, `[...document.querySelectorAll("#rewind-files li")].map(l => l.dataset.path + ":" + l.dataset.change).join(" ")`); got != "a.txt:modified" {
		t.Errorf("rewinding to step 1 would change %q", got)
	}
	b.run(click("#rewind-ok"), chromedp.WaitVisible(chromedp.CSS(status("paused"))))
	b.waitText("#reason", "rewound")
	if got := files(t, st.Workspace); !sameFiles(got, map[string]string{"a.txt": "one\n"}) {
		t.Errorf("after the rewind to step 1 the workspace holds %q", got)
	}
	if n := eval[int](b, `document.querySelectorAll("#timeline .iter.rewound").length`); n != 4 {
		t.Errorf("%d steps marked rewound, want 4", n)
	}
	b.shot("real-server-rewound-paused")
	b.run(click("#btn-resume"), chromedp.WaitVisible(chromedp.CSS(status("completed"))))
	if got := files(t, waitEnded(t, url, id).Workspace); !sameFiles(got, map[string]string{"a.txt": "one\nthree\n"}) {
		t.Errorf("resumed after the rewind, the session ended with %q", got)
	}

	b.run(click(`#timeline .iter:not(.rewound) [data-fork="2"]`), chromedp.WaitVisible(chromedp.CSS("#fork-message")),
		chromedp.SetValue(chromedp.CSS("#fork-message"), "Go on as before."), click("#fork-ok"))
	b.waitJS("the fork's page opens", fmt.Sprintf(`location.hash.startsWith("#/s/") && location.hash !== "#/s/%s"`, id))
	fork := strings.TrimPrefix(eval[string](b, "location.hash"), "#/s/")
	b.run(chromedp.WaitVisible(chromedp.CSS(status("completed"))), chromedp.WaitVisible(chromedp.CSS(`#fork-tree [data-session="`+id+`"] a`)))
	fst := waitEnded(t, url, fork)
	if fst.Workspace == st.Workspace {
		t.Fatalf("the fork works in the original's workspace %s", st.Workspace)
	}
	if got := files(t, fst.Workspace); !sameFiles(got, map[string]string{"a.txt": "one\nthree\n"}) {
		t.Errorf("the fork ended with %q", got)
	}
	if got := files(t, st.Workspace); !sameFiles(got, map[string]string{"a.txt": "one\nthree\n"}) {
		t.Errorf("the fork changed the original's workspace: %q", got)
	}
	b.shot("real-server-fork")
	s.stop()
}
