package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/agentloop/agentloop/assemble"
	"github.com/agentloop/agentloop/model/price"
	"github.com/agentloop/agentloop/server"
	"github.com/agentloop/agentloop/service"
	"github.com/agentloop/agentloop/store/sqlite"
	"github.com/agentloop/agentloop/web"
)

// browser runs the dashboard against a real server (SQLite, scripted
// models) in headless Chromium.
type browser struct {
	t   *testing.T
	url string
	dir string
	ctx context.Context
}

func chromiumPath(t *testing.T) string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("AGENTLOOP_BROWSER_TESTS") != "" {
		t.Fatal("AGENTLOOP_BROWSER_TESTS is set but no Chromium is installed (apt-get install chromium)")
	}
	t.Skip("no Chromium installed: apt-get install chromium (CI installs it and sets AGENTLOOP_BROWSER_TESTS)")
	return ""
}

func newBrowser(t *testing.T, approval string) *browser {
	t.Helper()
	return newBrowserWith(t, approval, nil)
}

// newBrowserWith is newBrowser with the server's config changed by tweak
// first.
func newBrowserWith(t *testing.T, approval string, tweak func(*server.Config)) *browser {
	t.Helper()
	exe := chromiumPath(t)
	dir := t.TempDir()
	st, err := sqlite.Open(filepath.Join(dir, "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	tracked := &server.Workspaces{}
	resolver := &assemble.Resolver{OnWorkspace: tracked.Track}
	svc, err := service.New(service.Config{Store: st, Runner: resolver.RunnerConfig(st, price.Default())})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close() })
	ws := filepath.Join(dir, "ws")
	os.MkdirAll(ws, 0o700)
	cfg := server.Config{Service: svc, Keys: st, UI: web.Handler(), Workspaces: tracked, Heartbeat: time.Second,
		Defaults: server.Defaults{Approval: approval, Workspaces: ws, AllowScripts: true}}
	if tweak != nil {
		tweak(&cfg)
	}
	h := server.New(cfg)
	t.Cleanup(h.Observe(st))
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe), chromedp.NoSandbox, chromedp.WindowSize(1280, 900))
	// Chromium now and then crashes while starting on a loaded machine
	// (before it opens any page): that is tried again, twice.
	for attempt := 1; ; attempt++ {
		actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
		ctx, cancel := chromedp.NewContext(actx)
		// The first action starts the browser on the context it gets:
		// give it the undeadlined one, then bound each step (see run).
		err := chromedp.Do(ctx)
		if err == nil {
			t.Cleanup(func() { cancel(); cancelA() })
			return &browser{t: t, url: srv.URL, dir: dir, ctx: ctx}
		}
		cancel()
		cancelA()
		if attempt == 3 {
			t.Fatal(err)
		}
		t.Logf("chromium did not start (attempt %d), trying again: %v", attempt, err)
	}
}

func (b *browser) run(actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	// One step may take 20 s; the browser's own context lives on, so a
	// failure can still show the page.
	ctx, cancel := context.WithTimeout(b.ctx, 20*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		b.fail(err)
	}
}

func (b *browser) fail(err error) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
	defer cancel()
	html, _ := chromedp.Run(ctx, chromedp.OuterHTML(chromedp.CSS("main")))
	b.shot("failure-" + b.t.Name())
	b.t.Fatalf("%v\npage: %.2000s", err, html)
}

// text is an element's text ("" when there is none). It is read in one
// step of the page's own JavaScript: the page re-renders as events
// arrive, and a node looked up in one protocol call can be gone by the
// next.
func (b *browser) text(sel string) string {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](fmt.Sprintf(`(document.querySelector(%q) || {}).textContent || ""`, sel)))
	if err != nil {
		b.fail(err)
	}
	return s
}

// click waits for an element and clicks it in one step of the page's
// JavaScript (see text).
func click(sel string) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		if _, err := chromedp.WaitVisible(chromedp.CSS(sel))(ctx, t); err != nil {
			return chromedp.Void{}, err
		}
		ok, err := chromedp.Evaluate[bool](fmt.Sprintf(`(() => { const e = document.querySelector(%q); if (!e || e.disabled) return false; e.click(); return true })()`, sel))(ctx, t)
		if err == nil && !ok {
			err = fmt.Errorf("%s is gone or disabled", sel)
		}
		return chromedp.Void{}, err
	}
}

// shot saves a screenshot to testdata/screenshots.
func (b *browser) shot(name string) {
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Logf("screenshot %s: %v", name, err)
		return
	}
	name = strings.NewReplacer("/", "-", " ", "-").Replace(name)
	if err = os.WriteFile(filepath.Join("testdata", "screenshots", name+".png"), png, 0o644); err != nil {
		b.t.Logf("screenshot %s: %v", name, err)
	}
}

// script writes a scripted model for sessions started from the page.
func (b *browser) script(steps ...string) string {
	path := filepath.Join(b.dir, fmt.Sprintf("script-%d.json", time.Now().UnixNano()))
	if err := os.WriteFile(path, []byte(`{"steps":[`+strings.Join(steps, ",")+`]}`), 0o600); err != nil {
		b.t.Fatal(err)
	}
	return "script:" + path
}

func status(s string) string { return `#status [data-status="` + s + `"]` }

// start fills the page's form and starts a session.
func (b *browser) start(task, model string) {
	b.run(
		chromedp.Navigate(b.url+"/#/"),
		chromedp.WaitVisible(chromedp.CSS("#new-task")),
		chromedp.SendKeys(chromedp.CSS("#new-task"), task),
		chromedp.SetValue(chromedp.CSS("#new-model"), model),
		click("#new-start"),
		chromedp.WaitVisible(chromedp.CSS("#status")),
	)
}

// From the page: start a session that plans and writes files, watch the
// plan card fill in and the answer arrive, then find it in the list.
func TestStartAndWatchASession(t *testing.T) {
	b := newBrowser(t, "auto")
	model := b.script(
		`{"tool_calls":[{"name":"update_plan","arguments":{"action":"create","goal":"Write the two notes","steps":["Write a.txt","Write b.txt"]}}],"delay":"300ms"}`,
		`{"tool_calls":[{"name":"write_file","arguments":{"path":"a.txt","content":"alpha"}}],"delay":"300ms"}`,
		`{"tool_calls":[{"name":"update_plan","arguments":{"action":"update_step","step":1,"status":"completed","result":"a.txt written"}}],"delay":"300ms"}`,
		`{"tool_calls":[{"name":"write_file","arguments":{"path":"b.txt","content":"beta"}}],"delay":"700ms"}`,
		`{"tool_calls":[{"name":"update_plan","arguments":{"action":"update_step","step":2,"status":"completed","result":"b.txt written"}}],"delay":"300ms"}`,
		`{"tool_calls":[{"name":"update_plan","arguments":{"action":"complete"}}],"delay":"300ms"}`,
		`{"text":"Wrote a.txt and b.txt."}`)
	b.start("Write two notes, a.txt and b.txt", model)
	var pct string
	b.run(chromedp.WaitVisible(chromedp.CSS("#plan .st-completed")))
	pct = b.text("#plan-pct")
	b.shot("session-running-plan")
	if !strings.HasPrefix(pct, "50%") && !strings.HasPrefix(pct, "100%") {
		t.Errorf("plan progress %q after the first step", pct)
	}
	var answer string
	b.run(chromedp.WaitVisible(chromedp.CSS(status("completed"))), chromedp.WaitVisible(chromedp.CSS("#answer")))
	answer = b.text("#answer")
	if !strings.Contains(answer, "Wrote a.txt and b.txt.") {
		t.Fatalf("answer %q", answer)
	}
	b.shot("session-completed")
	var rows string
	b.run(chromedp.Navigate(b.url+"/#/"), chromedp.WaitVisible(chromedp.CSS(`#sessions tr[data-id] [data-status="completed"]`)))
	rows = b.text("#sessions")
	if !strings.Contains(rows, "Write two notes") || !strings.Contains(rows, " of 15") {
		t.Fatalf("list (task, step n of N): %q", rows)
	}
	b.shot("sessions-list")
}

// Pause and resume from the page, then terminate with a reason from the
// dialog: the status follows each control, and a reload restores the view.
func TestPauseResumeReloadTerminate(t *testing.T) {
	b := newBrowser(t, "auto")
	var steps []string
	for i := range 30 {
		steps = append(steps, fmt.Sprintf(`{"tool_calls":[{"name":"write_file","arguments":{"path":"f%d.txt","content":"%d"}}],"delay":"250ms"}`, i, i))
	}
	b.start("Write thirty files, slowly", b.script(append(steps, `{"text":"done"}`)...))
	b.run(chromedp.WaitVisible(chromedp.CSS(status("running"))), chromedp.WaitVisible(chromedp.CSS(`.iter[data-n="2"]`)))
	b.run(click("#btn-pause"), chromedp.WaitVisible(chromedp.CSS(status("paused"))))
	b.shot("session-paused")
	var seqBefore string
	b.run(chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS(status("paused"))))
	seqBefore = b.text("#step-text")
	if !strings.HasPrefix(seqBefore, "Step ") {
		t.Fatalf("after a reload: %q", seqBefore)
	}
	b.run(click("#btn-resume"), chromedp.WaitVisible(chromedp.CSS(status("running"))))
	b.run(click("#btn-terminate"), chromedp.WaitVisible(chromedp.CSS("#terminate")))
	b.shot("terminate-dialog")
	var reason string
	b.run(
		click(`#terminate input[value="different_approach"]`),
		click("#term-ok"),
		chromedp.WaitVisible(chromedp.CSS(status("terminated"))))
	reason = b.text("#reason")
	if reason != "different_approach" {
		t.Fatalf("reason %q", reason)
	}
	b.shot("session-terminated")
}

// A tool call waiting for approval is approved from the page, with its
// arguments edited, and the session goes on to its answer.
func TestApprovalFromThePage(t *testing.T) {
	b := newBrowser(t, "ask")
	b.start("Write the greeting", b.script(
		`{"tool_calls":[{"name":"write_file","arguments":{"path":"hello.txt","content":"hi"}}]}`,
		`{"text":"Wrote hello.txt."}`))
	b.run(chromedp.WaitVisible(chromedp.CSS("#approval")), chromedp.WaitVisible(chromedp.CSS(status("waiting"))))
	b.shot("approval-needed")
	b.run(
		chromedp.SetValue(chromedp.CSS("#approval-args"), `{"path":"hello.txt","content":"hello, edited"}`),
		click("#btn-approve"),
		chromedp.WaitVisible(chromedp.CSS(status("completed"))))
	b.shot("approval-done")
	var timeline string
	b.run()
	timeline = b.text("#timeline")
	if !strings.Contains(timeline, "hello, edited") {
		t.Fatalf("the edited arguments are not in the timeline: %q", timeline)
	}
}

// Two tabs on one session stay in sync; the page works on a narrow screen;
// a finished session shows the files it changed and their diff.
func TestTwoTabsNarrowScreenAndDiff(t *testing.T) {
	b := newBrowser(t, "auto")
	var steps []string
	for i := range 12 {
		steps = append(steps, fmt.Sprintf(`{"tool_calls":[{"name":"write_file","arguments":{"path":"n%d.txt","content":"line %d\n"}}],"delay":"400ms"}`, i, i))
	}
	b.start("Write twelve notes", b.script(append(steps, `{"text":"twelve notes written"}`)...))
	// Paused before the second tab opens: what that tab sees does not
	// depend on how fast it opens on a loaded machine.
	b.run(click("#btn-pause"), chromedp.WaitVisible(chromedp.CSS(status("paused"))))
	loc, err := chromedp.Run(b.ctx, chromedp.Location())
	if err != nil {
		t.Fatal(err)
	}
	// A second tab of the same browser, narrow.
	tab, cancel := chromedp.NewContext(b.ctx)
	defer cancel()
	if err := chromedp.Do(tab); err != nil { // opens the tab, on a context without a deadline
		t.Fatal(err)
	}
	other := &browser{t: t, url: b.url, dir: b.dir, ctx: tab}
	other.run(chromedp.EmulateViewport(390, 800), chromedp.Navigate(loc), chromedp.WaitVisible(chromedp.CSS(status("paused"))))
	other.shot("narrow-second-tab-paused")
	other.run(click("#btn-resume"))
	// Running is a passing state: only its end is sure to be seen.
	b.run(chromedp.WaitVisible(chromedp.CSS(status("completed"))))
	b.run(click("#changes summary"), chromedp.WaitVisible(chromedp.CSS("#diff")))
	var diff string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if diff = b.text("#diff"); strings.Contains(diff, "+line 11") {
			break
		}
	}
	if !strings.Contains(diff, "+line 11") {
		t.Fatalf("diff: %q", diff)
	}
	b.shot("session-diff")
}

// A session that repeats itself is told, then waits for a person: the page
// shows its question, and a reply from the page lets it go on.
func TestStuckSessionWaitsAndTakesAReply(t *testing.T) {
	b := newBrowser(t, "auto")
	same := `{"tool_calls":[{"name":"read_file","arguments":{"path":"missing.txt"}}],"delay":"100ms"}`
	// Three same errors: the model is told; a fourth: it waits for a
	// person (then the answer, before no-progress would end it).
	steps := []string{}
	for range 4 {
		steps = append(steps, same)
	}
	b.start("Read the missing file", b.script(append(steps, `{"text":"Understood: the file does not exist."}`)...))
	b.run(chromedp.WaitVisible(chromedp.CSS(status("waiting"))), chromedp.WaitVisible(chromedp.CSS("#question")))
	if q := b.text("#question"); !strings.Contains(q, "stuck") {
		t.Fatalf("question %q", q)
	}
	b.shot("stuck-waiting")
	b.run(chromedp.SendKeys(chromedp.CSS("#reply-text"), "The file does not exist; stop reading it."), click("#btn-reply"),
		chromedp.WaitVisible(chromedp.CSS(`#status [data-status="running"], #status [data-status="completed"]`)),
		chromedp.WaitVisible(chromedp.CSS(status("completed"))))
	if a := b.text("#answer"); !strings.Contains(a, "does not exist") {
		t.Fatalf("answer %q", a)
	}
}

// A session that runs out of time ends failed (timeout) with its partial
// answer, and the page says so.
func TestTimeoutShowsOnThePage(t *testing.T) {
	b := newBrowser(t, "auto")
	b.run(chromedp.Navigate(b.url + "/#/"))
	// The form has no timeout field: start it over the API, then watch it.
	resp, err := http.Post(b.url+"/v1/sessions", "application/json", strings.NewReader(fmt.Sprintf(`{"task":"Think for a long time","timeout":"1s","model":%q}`,
		b.script(`{"text":"Still thinking.","tool_calls":[{"name":"list_dir","arguments":{}}],"delay":"400ms"}`, `{"text":"More thinking.","tool_calls":[{"name":"list_dir","arguments":{"path":"."}}],"delay":"800ms"}`, `{"text":"wrap-up: partial","delay":"10ms"}`))))
	if err != nil {
		t.Fatal(err)
	}
	var c struct{ ID string }
	json.NewDecoder(resp.Body).Decode(&c)
	resp.Body.Close()
	b.run(chromedp.Navigate(b.url+"/#/s/"+c.ID), chromedp.WaitVisible(chromedp.CSS(status("failed"))))
	if r := b.text("#reason"); r != "timeout" {
		t.Fatalf("reason %q", r)
	}
	b.shot("session-timeout")
}

// Terminate with each of the four reasons: the status the page shows is
// the one the reason means.
func TestTerminateReasons(t *testing.T) {
	b := newBrowser(t, "auto")
	var steps []string
	for i := range 40 {
		steps = append(steps, fmt.Sprintf(`{"tool_calls":[{"name":"write_file","arguments":{"path":"t%d.txt","content":"x"}}],"delay":"200ms"}`, i))
	}
	model := b.script(steps...)
	for _, c := range []struct{ reason, status string }{
		{"completed_by_user", "completed"}, {"failed", "failed"}, {"different_approach", "terminated"}, {"stuck", "error"},
	} {
		b.start("Work until stopped: "+c.reason, model)
		b.run(chromedp.WaitVisible(chromedp.CSS(status("running"))),
			click("#btn-terminate"), chromedp.WaitVisible(chromedp.CSS("#terminate")),
			click(`#terminate input[value="`+c.reason+`"]`), click("#term-ok"),
			chromedp.WaitVisible(chromedp.CSS(status(c.status))))
		b.run(chromedp.WaitVisible(chromedp.CSS("#reason")))
		if got := b.text("#reason"); got == "" {
			t.Errorf("%s: no reason shown", c.reason)
		}
	}
	b.shot("terminated-stuck-by-user")
}

// The list filters by label and by status.
func TestListFilters(t *testing.T) {
	b := newBrowser(t, "auto")
	for _, body := range []string{`{"task":"red team task","labels":{"team":"red"}}`, `{"task":"blue team task","labels":{"team":"blue"}}`} {
		resp, err := http.Post(b.url+"/v1/sessions", "application/json", strings.NewReader(strings.Replace(body, `{"task"`, fmt.Sprintf(`{"model":%q,"task"`, b.script(`{"text":"done"}`)), 1)))
		if err != nil || resp.StatusCode != 201 {
			t.Fatalf("create: %v %v", err, resp)
		}
		resp.Body.Close()
	}
	b.run(chromedp.Navigate(b.url+"/#/?label=team%3Dred"), chromedp.WaitVisible(chromedp.CSS(`#sessions tr[data-id]`)))
	time.Sleep(300 * time.Millisecond)
	if rows := b.text("#sessions"); !strings.Contains(rows, "red team task") || strings.Contains(rows, "blue team task") {
		t.Fatalf("label filter: %q", rows)
	}
	b.shot("sessions-filtered-by-label")
}

// An admin edits a prompt twice and compares the versions, and makes a key.
func TestAdminPromptsAndKeys(t *testing.T) {
	b := newBrowser(t, "auto")
	b.run(chromedp.Navigate(b.url+"/#/admin"), chromedp.WaitVisible(chromedp.CSS("#prompt-name")),
		chromedp.SendKeys(chromedp.CSS("#prompt-name"), "coder"),
		chromedp.SendKeys(chromedp.CSS("#prompt-text"), "You write code.\nKeep it short."),
		click("#btn-prompt-save"))
	// Saved, and the editor shows the stored version.
	for deadline := time.Now().Add(5 * time.Second); !strings.Contains(b.text("#prompt-versions"), "Version 1 of coder"); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("first save: %q %q", b.text("#admin-msg"), b.text("#prompt-versions"))
		}
	}
	b.run(chromedp.SetValue(chromedp.CSS("#prompt-text"), "You write careful code.\nKeep it short."), click("#btn-prompt-save"),
		chromedp.WaitVisible(chromedp.CSS("#btn-prompt-diff")), click("#btn-prompt-diff"))
	var diff string
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if diff = b.text("#prompt-diff"); strings.Contains(diff, "+ You write careful code.") {
			break
		}
	}
	if !strings.Contains(diff, "- You write code.") || !strings.Contains(diff, "+ You write careful code.") || !strings.Contains(diff, "  Keep it short.") {
		t.Fatalf("version diff: %q", diff)
	}
	b.shot("admin-prompt-versions")
	// Keys: without a tenant the local admin is told to name one; with one
	// the key is made, shown once and listed; revoked, it opens nothing.
	b.run(click("#btn-key"))
	b.waitText("#key-out", "say which tenant")
	b.run(chromedp.SendKeys(chromedp.CSS("#key-name"), "ci bot"), chromedp.SendKeys(chromedp.CSS("#key-tenant"), "acme"),
		chromedp.SetValue(chromedp.CSS("#key-role"), "operator"), click("#btn-key"))
	b.waitText("#key-out", "operator of acme")
	secret := b.text("#new-key")
	b.waitText("#keys", "ci bot")
	if code := getStatus(t, b.url+"/v1/sessions", secret); code != 200 {
		t.Fatalf("the new key listing sessions: %d", code)
	}
	b.shot("admin-keys")
	b.run(click("#keys [data-revoke]"), click("#keys [data-confirm-revoke]"))
	b.waitText("#key-out", "Revoked")
	b.waitText("#keys", "No keys yet")
	if code := getStatus(t, b.url+"/v1/sessions", secret); code != 401 {
		t.Fatalf("the revoked key listing sessions: %d", code)
	}
}

// waitText waits until an element's text contains want.
func (b *browser) waitText(sel, want string) {
	b.t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(b.text(sel), want); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			b.fail(fmt.Errorf("%s never said %q; it says %q", sel, want, b.text(sel)))
		}
	}
}

func getStatus(t *testing.T, url, key string) int {
	req, _ := http.NewRequest("GET", url, nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// Run the tests and fix them (the CLI's demo, watched in the browser): the
// page shows the edit, the passing verification and the diff.
func TestRunTestsAndFix(t *testing.T) {
	b := newBrowser(t, "auto")
	ws := filepath.Join(b.dir, "ws", "fix-test")
	if out, err := exec.Command("cp", "-r", "../examples/scripts/fix-test", ws).CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	script, err := filepath.Abs("../examples/scripts/fix-test.json")
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(b.url+"/v1/sessions", "application/json", strings.NewReader(fmt.Sprintf(
		`{"task":"Fix the failing test","model":"script:%s","workspace":"fix-test","verify":["go test ./..."]}`, script)))
	if err != nil || resp.StatusCode != 201 {
		t.Fatalf("create: %v %v", err, resp)
	}
	var c struct{ ID string }
	json.NewDecoder(resp.Body).Decode(&c)
	resp.Body.Close()
	b.run(chromedp.Navigate(b.url+"/#/s/"+c.ID), chromedp.WaitVisible(chromedp.CSS(status("completed"))), chromedp.WaitVisible(chromedp.CSS("#verification")))
	if v := b.text("#verification"); !strings.Contains(v, "pass") || !strings.Contains(v, "go test ./...") {
		t.Fatalf("verification: %q", v)
	}
	b.run(click("#changes summary"))
	var diff string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if diff = b.text("#diff"); strings.Contains(diff, "+\treturn a + b") {
			break
		}
	}
	if !strings.Contains(diff, "-\treturn a - b") || !strings.Contains(diff, "+\treturn a + b") {
		t.Fatalf("diff: %q", diff)
	}
	b.shot("run-tests-and-fix")
}

// The form starts a session from a conversation, with labels.
func TestStartFromAConversation(t *testing.T) {
	b := newBrowser(t, "auto")
	model := b.script(`{"text":"Paris.","expect":{"last_message_contains":"capital of France"}}`)
	b.run(chromedp.Navigate(b.url+"/#/"), chromedp.WaitVisible(chromedp.CSS("#new-task")),
		chromedp.SetValue(chromedp.CSS("#new-model"), model),
		click("#new-more summary"),
		chromedp.SetValue(chromedp.CSS("#new-messages"), `[{"role":"system","content":"Answer in one word."},{"role":"user","content":"What is the capital of France?"}]`),
		chromedp.SetValue(chromedp.CSS("#new-labels"), "team=geo, env=test"),
		click("#new-start"),
		chromedp.WaitVisible(chromedp.CSS(status("completed"))))
	if a := b.text("#answer"); !strings.Contains(a, "Paris.") {
		t.Fatalf("answer %q", a)
	}
	b.run(chromedp.Navigate(b.url+"/#/?label=team%3Dgeo"), chromedp.WaitVisible(chromedp.CSS(`#sessions tr[data-id]`)))
	b.shot("started-from-conversation")
	// Bad JSON is refused on the page, before anything is sent.
	b.run(chromedp.Navigate(b.url+"/#/"), chromedp.WaitVisible(chromedp.CSS("#new-task")), click("#new-more summary"),
		chromedp.SetValue(chromedp.CSS("#new-messages"), `[{"role":`), click("#new-start"))
	for deadline := time.Now().Add(5 * time.Second); !strings.Contains(b.text("#new-error"), "not valid JSON"); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("error shown: %q", b.text("#new-error"))
		}
	}
}

// The multi-step refactor (seed 000): read a class component, rewrite it
// as a function, check the file, answer. A person opens step 2's details
// (the full write_file arguments and its result), reloads, and the same
// step is still open.
func TestMultiStepRefactorWithStepDetails(t *testing.T) {
	b := newBrowser(t, "auto")
	ws := filepath.Join(b.dir, "ws", "app")
	os.MkdirAll(filepath.Join(ws, "src"), 0o755)
	class := "import React from 'react';\n\nexport class App extends React.Component {\n  render() {\n    return <h1>Hello</h1>;\n  }\n}\n"
	functional := "import React from 'react';\n\nexport function App() {\n  return <h1>Hello</h1>;\n}\n"
	if err := os.WriteFile(filepath.Join(ws, "src", "app.tsx"), []byte(class), 0o644); err != nil {
		t.Fatal(err)
	}
	args := func(v any) string { j, _ := json.Marshal(v); return string(j) }
	model := b.script(
		`{"text":"Reading the component first.","tool_calls":[{"name":"read_file","arguments":{"path":"src/app.tsx"}}]}`,
		`{"text":"App is a class component with only render(); rewriting it as a function.","tool_calls":[{"name":"write_file","arguments":`+args(map[string]string{"path": "src/app.tsx", "content": functional})+`}]}`,
		`{"text":"Checking that no class component is left.","tool_calls":[{"name":"execute_command","arguments":{"command":"grep -c 'extends React.Component' src/app.tsx || echo none left"}}]}`,
		`{"text":"src/app.tsx now exports App as a function component; no class components are left.","finish_reason":"stop"}`,
	)
	resp, err := http.Post(b.url+"/v1/sessions", "application/json", strings.NewReader(fmt.Sprintf(
		`{"task":"Refactor src/app.tsx to use functional components","model":%q,"workspace":"app"}`, model)))
	if err != nil || resp.StatusCode != 201 {
		t.Fatalf("create: %v %v", err, resp)
	}
	var c struct{ ID string }
	json.NewDecoder(resp.Body).Decode(&c)
	resp.Body.Close()
	b.run(chromedp.Navigate(b.url+"/#/s/"+c.ID), chromedp.WaitVisible(chromedp.CSS(status("completed"))))
	if got, _ := os.ReadFile(filepath.Join(ws, "src", "app.tsx")); string(got) != functional {
		t.Fatalf("the file after the session:\n%s", got)
	}
	if tl := b.text("#timeline"); !strings.Contains(tl, "Step 4") || !strings.Contains(tl, "none left") && !strings.Contains(tl, "execute_command") {
		t.Fatalf("timeline: %q", tl)
	}
	b.waitText("#answer", "function component")
	b.run(click(`[data-details="2"]`))
	b.waitText("#iteration", "Step 2")
	panel := b.text("#iteration")
	for _, want := range []string{"write_file — success", "export function App() {\n  return", "rewriting it as a function", "Tokens"} {
		if !strings.Contains(panel, want) {
			t.Fatalf("step 2's details lack %q: %q", want, panel)
		}
	}
	b.shot("refactor-step-details")
	// Reload: the address keeps the step, the panel comes back.
	b.run(chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS("#iteration")))
	b.waitText("#iteration", "export function App()")
	b.run(click("#btn-iteration-close"))
	for deadline := time.Now().Add(5 * time.Second); b.text("#iteration") != ""; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the details panel did not close")
		}
	}
}
