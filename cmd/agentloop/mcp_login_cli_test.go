package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentloop/agentloop/internal/oauthtest"
	"github.com/agentloop/agentloop/tool/mcp"
)

// oauthCLI is a CLI whose data directory (where the tokens are kept) and
// config file are the test's, with a remote MCP server "tracker" that
// needs an OAuth login, and no display (no browser is started).
func oauthCLI(t *testing.T) (c *cli, as *oauthtest.AuthServer, cfgPath, serverURL, tokensPath string) {
	as = oauthtest.NewAuthServer(t)
	srv := oauthtest.ProtectMCP(t, as, oauthtest.EchoServer())
	serverURL = srv.URL + "/mcp"
	cfgPath = filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfgPath, []byte(fmt.Sprintf("profiles:\n  remote:\n    tools: [read_file]\n    mcp_servers:\n      tracker:\n        url: %s\n        oauth: true\n", serverURL)), 0o600); err != nil {
		t.Fatal(err)
	}
	data := t.TempDir()
	c = newCLI(t)
	c.env = []string{"XDG_DATA_HOME=" + data, "DISPLAY=", "WAYLAND_DISPLAY="}
	return c, as, cfgPath, serverURL, filepath.Join(data, "agentloop", mcp.TokenFileName)
}

// login runs `agentloop mcp login tracker` and plays the person at the
// browser: it reads the URL the command prints, opens it and follows the
// redirects back to the command's loopback listener.
func login(t *testing.T, c *cli, cfgPath string, extra ...string) (stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"mcp", "login", "tracker", "--config", cfgPath}, extra...)...)
	cmd.Env = append(hermeticEnv(t), c.env...)
	var out strings.Builder
	cmd.Stdout = &out
	errPipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var errText strings.Builder
	sc := bufio.NewScanner(errPipe)
	for sc.Scan() {
		line := sc.Text()
		errText.WriteString(line + "\n")
		if u, ok := strings.CutPrefix(line, "  "); ok && strings.HasPrefix(u, "http://") {
			resp, err := http.Get(u)
			if err != nil {
				t.Fatalf("browser: %v", err)
			}
			page, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || !strings.Contains(string(page), "You can close this tab") {
				t.Fatalf("browser: %s %s: %s", resp.Request.URL, resp.Status, page)
			}
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("mcp login: %v\nstdout:\n%s\nstderr:\n%s", err, out.String(), errText.String())
	}
	return out.String(), errText.String()
}

// whoamiScript calls the protected server's tool and checks, at its next
// step, that the model got the tool's answer.
func whoamiScript(t *testing.T) string {
	return writeScript(t, `{"steps": [
		{"text": "Asking the tracker who I am.", "tool_calls": [{"name": "tracker__whoami", "arguments": {"text": "hello"}}], "expect": {"tools_offered": ["tracker__whoami"]}},
		{"text": "The tracker answered.", "finish_reason": "stop", "expect": {"last_message_role": "tool", "last_message_contains": "protected says hello to tester"}}
	]}`)
}

func TestMCPOAuthLoginRunRefreshLogout(t *testing.T) {
	c, as, cfgPath, serverURL, tokensPath := oauthCLI(t)
	ws := t.TempDir()
	script := whoamiScript(t)
	run := func() (string, string, int) {
		return c.run("", "run", "--config", cfgPath, "--profile", "remote", "--model", "script:"+script, "--dir", ws, "ask the tracker")
	}
	status := func() loginStatus {
		t.Helper()
		out, errOut, code := c.run("", "mcp", "status", "--config", cfgPath, "--json")
		var list []loginStatus
		if code != 0 || json.Unmarshal([]byte(out), &list) != nil || len(list) != 1 {
			t.Fatalf("mcp status: %d %s %s", code, out, errOut)
		}
		return list[0]
	}

	// Before a login: status says so, and a session is refused at once
	// with the command to run.
	if st := status(); st.Server != "tracker" || st.URL != serverURL || st.LoggedIn || st.State != "not logged in" {
		t.Fatalf("status before login: %+v", st)
	}
	out, errOut, code := run()
	if code == 0 || !strings.Contains(out+errOut, `MCP server "tracker" (`+serverURL+`) needs a login: not logged in`) || !strings.Contains(out+errOut, `run "agentloop mcp login tracker"`) {
		t.Fatalf("run before login: exit %d\n%s\n%s", code, out, errOut)
	}

	out, errOut = login(t, c, cfgPath)
	if !strings.Contains(errOut, "open this URL in a browser") || !strings.Contains(errOut, "Waiting for the browser to come back to http://127.0.0.1:") ||
		!strings.Contains(out, `Logged in to MCP server "tracker" (`+serverURL+`): 1 tool offered.`) || !strings.Contains(out, tokensPath) {
		t.Fatalf("login output:\n%s\n%s", out, errOut)
	}
	if regs, auths, _ := as.Counts(); regs != 1 || auths != 1 {
		t.Fatalf("registrations %d, authorizations %d", regs, auths)
	}
	info, err := os.Stat(tokensPath)
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("tokens file: %v, %v", info, err)
	}
	stored := storedLogin(t, tokensPath, serverURL)
	if st := status(); !st.LoggedIn || st.State != "logged in" || !st.Refreshable || st.ClientID != stored.ClientID || !st.Registered || st.ExpiresAt == nil {
		t.Fatalf("status after login: %+v", st)
	}

	// A session uses the stored token: the model gets the tool's answer.
	if out, errOut, code := run(); code != 0 || !strings.Contains(out, "The tracker answered.") {
		t.Fatalf("run after login: exit %d\n%s\n%s", code, out, errOut)
	}

	// The server stops accepting the access token: the session refreshes
	// it, carries on, and the refreshed token is saved.
	as.ExpireAccessTokens()
	if out, errOut, code := run(); code != 0 || !strings.Contains(out, "The tracker answered.") {
		t.Fatalf("run with a token the server expired: exit %d\n%s\n%s", code, out, errOut)
	}
	refreshed := storedLogin(t, tokensPath, serverURL)
	if _, _, n := as.Counts(); n != 1 || refreshed.Token.AccessToken == stored.Token.AccessToken || refreshed.RefreshedAt.IsZero() {
		t.Fatalf("refreshes %d; stored after: %+v", n, refreshed)
	}

	// A stored token past its expiry: status says it will be refreshed,
	// and the next session refreshes it before sending it.
	refreshed.Token.Expiry = time.Now().Add(-time.Hour)
	if err := (&mcp.TokenFile{Path: tokensPath}).Put(refreshed); err != nil {
		t.Fatal(err)
	}
	if st := status(); st.State != "expired, refreshable" {
		t.Fatalf("status with an expired token: %+v", st)
	}
	if out, errOut, code := run(); code != 0 || !strings.Contains(out, "The tracker answered.") {
		t.Fatalf("run with an expired stored token: exit %d\n%s\n%s", code, out, errOut)
	}
	if _, _, n := as.Counts(); n != 2 {
		t.Fatalf("refreshes %d, want 2", n)
	}
	if st := status(); st.State != "logged in" || st.RefreshedAt == nil {
		t.Fatalf("status after the refresh: %+v", st)
	}

	// The authorization server revokes everything: the session is told to
	// log in again, not handed a raw 401.
	as.RevokeAll()
	out, errOut, code = run()
	if code == 0 || !strings.Contains(out+errOut, "the authorization server refused the refresh token (invalid_grant") || !strings.Contains(out+errOut, `run "agentloop mcp login tracker"`) {
		t.Fatalf("run after revocation: exit %d\n%s\n%s", code, out, errOut)
	}

	// Logging in again, then out.
	login(t, c, cfgPath)
	if out, errOut, code := run(); code != 0 {
		t.Fatalf("run after the second login: exit %d\n%s\n%s", code, out, errOut)
	}
	out, errOut, code = c.run("", "mcp", "logout", "tracker", "--config", cfgPath)
	if code != 0 || !strings.Contains(out, `Logged out of MCP server "tracker" (`+serverURL+`)`) {
		t.Fatalf("logout: %d %s %s", code, out, errOut)
	}
	if st := status(); st.LoggedIn {
		t.Fatalf("status after logout: %+v", st)
	}
	out, errOut, code = run()
	if code == 0 || !strings.Contains(out+errOut, "needs a login: not logged in") || !strings.Contains(out+errOut, `run "agentloop mcp login tracker"`) {
		t.Fatalf("run after logout: exit %d\n%s\n%s", code, out, errOut)
	}
	if out, _, code := c.run("", "mcp", "logout", "tracker", "--config", cfgPath); code != 0 || !strings.Contains(out, "was not logged in") {
		t.Fatalf("second logout: %d %s", code, out)
	}
}

func storedLogin(t *testing.T, path, url string) *mcp.StoredLogin {
	t.Helper()
	l, err := (&mcp.TokenFile{Path: path}).Get(url)
	if err != nil || l == nil {
		t.Fatalf("stored login for %s: %v, %v", url, l, err)
	}
	return l
}

func TestMCPLoginBadInput(t *testing.T) {
	c, _, cfgPath, _, _ := oauthCLI(t)
	open := filepath.Join(t.TempDir(), "open.yaml")
	os.WriteFile(open, []byte("profiles:\n  p:\n    mcp_servers:\n      plain:\n        url: http://127.0.0.1:1/mcp\n"), 0o600)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"mcp", "login"}, "give the name of one MCP server"},
		{[]string{"mcp", "login", "nope", "--config", cfgPath}, `no MCP server "nope" reached by url in ` + cfgPath + ` (servers with oauth: tracker)`},
		{[]string{"mcp", "login", "plain", "--config", open}, `MCP server "plain" (http://127.0.0.1:1/mcp) is not set to use OAuth; add "oauth: true" under it in ` + open},
		{[]string{"mcp", "login", "tracker", "--config", cfgPath, "--profile", "other"}, `--profile: no profile "other"`},
		{[]string{"mcp", "logout", "nope", "--config", cfgPath}, `no MCP server "nope"`},
		{[]string{"mcp", "status", "extra"}, `unexpected arguments ["extra"]`},
		{[]string{"mcp", "stray"}, "its subcommands are login, logout and status"},
	} {
		out, errOut, code := c.run("", tc.args...)
		if code != exitUsage || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, stderr %q (stdout %q), want %q", tc.args, code, errOut, out, tc.want)
		}
	}
}

// Ctrl-C while the login waits for the browser: it ends, says so, and
// stores nothing.
func TestMCPLoginInterrupted(t *testing.T) {
	c, _, cfgPath, _, tokensPath := oauthCLI(t)
	cmd := exec.Command(binary, "mcp", "login", "tracker", "--config", cfgPath)
	cmd.Env = append(hermeticEnv(t), c.env...)
	errPipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var errText strings.Builder
	sc := bufio.NewScanner(errPipe)
	for sc.Scan() {
		errText.WriteString(sc.Text() + "\n")
		if strings.HasPrefix(sc.Text(), "Waiting for the browser") {
			cmd.Process.Signal(os.Interrupt)
		}
	}
	err = cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != exitFailed || !strings.Contains(errText.String(), "the login was not finished: the browser did not come back to http://127.0.0.1:") {
		t.Fatalf("%v\n%s", err, errText.String())
	}
	if _, err := os.Stat(tokensPath); !os.IsNotExist(err) {
		t.Fatalf("a login that was not finished stored something: %v", err)
	}
}

// agentloop serve's sessions use the tokens a login stored after the
// server started, and a session after logout fails saying what to run.
func TestMCPOAuthServeSessions(t *testing.T) {
	c, _, cfgPath, _, _ := oauthCLI(t)
	ws := t.TempDir()
	s := c.serve("--config", cfgPath, "--allow-script-models", "--workspaces", ws)
	script := whoamiScript(t)
	run := func() (string, string, int) {
		return c.run("", "run", "--server", s.url, "--profile", "remote", "--model", "script:"+script, "ask the tracker")
	}
	login(t, c, cfgPath)
	if out, errOut, code := run(); code != 0 || !strings.Contains(out, "The tracker answered.") {
		t.Fatalf("run on the server after login: exit %d\n%s\n%s\nserver:\n%s", code, out, errOut, s.errText())
	}
	if out, errOut, code := c.run("", "mcp", "logout", "tracker", "--config", cfgPath); code != 0 {
		t.Fatalf("logout: %d %s %s", code, out, errOut)
	}
	out, errOut, code := run()
	if code == 0 || !strings.Contains(out+errOut, "needs a login: not logged in") || !strings.Contains(out+errOut, `run "agentloop mcp login tracker"`) {
		t.Fatalf("run on the server after logout: exit %d\n%s\n%s", code, out, errOut)
	}
	t.Logf("after logout, run --server says:\n%s%s", out, errOut)
}
