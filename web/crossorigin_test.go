package web_test

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/agentloop/agentloop/server"
)

// page serves one HTML page whose script calls the API named by its
// ?api= parameter and leaves what it saw in window.result. It returns the
// page's origin, with host as its name.
func page(t *testing.T, host string) string {
	t.Helper()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, `<!doctype html><title>another site</title><body><h1>another site</h1><pre id="out"></pre><script>
const api = new URLSearchParams(location.search).get("api");
const out = [];
window.result = (async () => {
  // A "simple" request: no preflight, sent even though the page cannot read the answer.
  try { await fetch(api + "/v1/sessions", {method: "POST", mode: "no-cors", headers: {"Content-Type": "text/plain"},
    body: JSON.stringify({task: "touch pwned", workspace: "y"})}); out.push("text/plain sent"); } catch (e) { out.push("text/plain: " + e); }
  // A form post, as a hidden form would send it.
  try { await fetch(api + "/v1/sessions", {method: "POST", mode: "no-cors", body: new URLSearchParams({task: "x"})}); out.push("form sent"); } catch (e) { out.push("form: " + e); }
  // A JSON request: preflighted; it reaches the API only for an allowed origin.
  try {
    const r = await fetch(api + "/v1/sessions", {method: "POST", headers: {"Content-Type": "application/json"}, body: JSON.stringify({task: "from the front end"})});
    out.push("json " + r.status + " " + await r.text());
  } catch (e) { out.push("json refused: " + e); }
  document.getElementById("out").textContent = out.join("\n");
  return out.join("\n");
})();
</script>`)
	}))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv.Listener = ln
	srv.Start()
	t.Cleanup(srv.Close)
	return "http://" + host + ":" + fmt.Sprint(ln.Addr().(*net.TCPAddr).Port)
}

func (b *browser) sessionCount() int {
	b.t.Helper()
	resp, err := http.Get(b.url + "/v1/sessions?limit=500")
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	var p struct{ Sessions []json.RawMessage }
	json.NewDecoder(resp.Body).Decode(&p)
	return len(p.Sessions)
}

// A page on another site, open in the user's browser, cannot start a
// session on the local server by any request a page can send; a front
// end on an origin the operator allowed can, and reads the answer.
func TestPagesOnOtherOriginsInChromium(t *testing.T) {
	evil, front := page(t, "localhost"), page(t, "localhost")
	b := newBrowserWith(t, "ask", func(c *server.Config) {
		c.Front.AllowedOrigins = []string{front}
		c.Sandbox.Backend, c.Sandbox.Network = "landlock", "none"
	})
	// The dashboard says where commands run.
	b.run(chromedp.Navigate(b.url + "/#/"))
	b.waitText("#sandbox", "sandbox: landlock, network none")
	b.shot("dashboard-sandbox")
	visit := func(origin string) string {
		b.run(chromedp.Navigate(origin+"/?api="+b.url), chromedp.WaitVisible(chromedp.CSS("#out")))
		got, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](`window.result`, chromedp.EvalAwaitPromise))
		if err != nil {
			b.fail(err)
		}
		return got
	}
	before := b.sessionCount()
	got := visit(evil)
	b.shot("cross-origin-page-refused")
	if after := b.sessionCount(); after != before {
		t.Fatalf("a page on another site started %d sessions; it saw:\n%s", after-before, got)
	}
	if !strings.Contains(got, "json refused") {
		t.Errorf("the page read an answer: %s", got)
	}

	got = visit(front)
	b.shot("allowed-front-end")
	if !strings.Contains(got, "json 201") || !strings.Contains(got, `"id"`) {
		t.Fatalf("the allowed front end could not start a session:\n%s", got)
	}
	// Its simple requests are still not JSON: only the JSON one counts.
	if after := b.sessionCount(); after != before+1 {
		t.Fatalf("%d sessions after the front end's one create", after-before)
	}
}
