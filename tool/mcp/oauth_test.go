package mcp

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/oauth2"

	"github.com/agentloop/agentloop/internal/oauthtest"
)

// browse plays the person at the browser: it opens the authorization URL
// and follows the redirects back to the login's loopback listener.
func browse(t *testing.T) func(string) {
	return func(authURL string) {
		resp, err := http.Get(authURL)
		if err != nil {
			t.Errorf("browser: %v", err)
			return
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("browser: %s answered %s", resp.Request.URL, resp.Status)
		}
	}
}

func oauthServer(t *testing.T, tokens *TokenFile) (*oauthtest.AuthServer, ServerConfig) {
	as := oauthtest.NewAuthServer(t)
	mcpSrv := oauthtest.ProtectMCP(t, as, oauthtest.EchoServer())
	return as, ServerConfig{Name: "remote", URL: mcpSrv.URL + "/mcp", OAuth: &OAuth{Tokens: tokens}, Reconnects: 1}
}

func TestOAuthLoginThenSessionsUseAndRefreshTheToken(t *testing.T) {
	tokens := &TokenFile{Path: filepath.Join(t.TempDir(), "data", TokenFileName)}
	as, cfg := oauthServer(t, tokens)

	// Before a login, a connection fails at once and says what to run.
	_, err := Connect(t.Context(), cfg)
	var login *LoginRequiredError
	if !errors.As(err, &login) || !strings.Contains(err.Error(), `run "agentloop mcp login remote"`) || !strings.Contains(err.Error(), "not logged in") {
		t.Fatalf("Connect before login = %v", err)
	}

	var redirect string
	res, err := Login(t.Context(), cfg, LoginOptions{Visit: browse(t), RedirectListening: func(u string) { redirect = u }})
	if err != nil {
		t.Fatalf("Login: %v", err)
	}
	if !strings.HasPrefix(redirect, "http://127.0.0.1:") || !strings.HasSuffix(redirect, "/callback") {
		t.Errorf("redirect URL %q", redirect)
	}
	l := res.Login
	if res.Tools != 1 || l.URL != cfg.URL || l.ClientID != "client-1" || !l.Registered || l.Token.RefreshToken == "" || l.Token.Expiry.IsZero() {
		t.Fatalf("login result %+v, token %+v", res, l.Token)
	}
	if regs, auths, _ := as.Counts(); regs != 1 || auths != 1 {
		t.Fatalf("registrations %d, authorizations %d", regs, auths)
	}
	st, err := os.Stat(tokens.Path)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("token file: %v %v", st.Mode(), err)
	}
	if dir, _ := os.Stat(filepath.Dir(tokens.Path)); dir.Mode().Perm() != 0o700 {
		t.Fatalf("token dir mode %v", dir.Mode())
	}

	s, err := Connect(t.Context(), cfg)
	if err != nil {
		t.Fatalf("Connect after login: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	whoami := byName(t, s.Tools(), "remote__whoami")
	call := func() string {
		t.Helper()
		r, err := whoami.Call(t.Context(), []byte(`{"text":"hi"}`))
		if err != nil {
			t.Fatal(err)
		}
		if r.IsError {
			t.Fatalf("call: %s", r.Output)
		}
		return r.Output
	}
	if got := call(); got != "protected says hi to tester" {
		t.Fatalf("call = %q", got)
	}

	// The server stops accepting the access token before its expiry: the
	// next call refreshes it once and goes through.
	as.ExpireAccessTokens()
	if got := call(); got != "protected says hi to tester" {
		t.Fatalf("call after the server expired the token = %q", got)
	}
	after, _ := tokens.Get(cfg.URL)
	if _, _, refreshes := as.Counts(); refreshes != 1 || after.Token.AccessToken == l.Token.AccessToken || after.RefreshedAt.IsZero() {
		t.Fatalf("refreshes %d; stored token after: %+v", refreshes, after)
	}

	// A stored token past its expiry is refreshed before it is sent, by a
	// new connection.
	after.Token.Expiry = time.Now().Add(-time.Hour)
	if err := tokens.Put(after); err != nil {
		t.Fatal(err)
	}
	s2, err := Connect(t.Context(), cfg)
	if err != nil {
		t.Fatalf("Connect with an expired stored token: %v", err)
	}
	_ = s2.Close()
	if _, _, refreshes := as.Counts(); refreshes != 2 {
		t.Fatalf("refreshes %d, want 2", refreshes)
	}
	third, _ := tokens.Get(cfg.URL)
	if !third.Token.Valid() {
		t.Fatalf("stored token after the refresh: %+v", third.Token)
	}

	// Everything revoked: the open connection's call says to log in again
	// instead of failing as a lost connection.
	as.RevokeAll()
	r, err := whoami.Call(t.Context(), []byte(`{"text":"hi"}`))
	if err != nil || !r.IsError || !strings.Contains(r.Output, "refused the refresh token (invalid_grant") || !strings.Contains(r.Output, `run "agentloop mcp login remote"`) {
		t.Fatalf("call after revocation: %+v %v", r, err)
	}

	// Logged out: a new connection is refused before anything is sent.
	if found, err := tokens.Delete(cfg.URL); !found || err != nil {
		t.Fatalf("Delete = %v, %v", found, err)
	}
	_, err = Connect(t.Context(), cfg)
	if !errors.As(err, &login) || login.Server != "remote" {
		t.Fatalf("Connect after logout = %v", err)
	}
}

func TestOAuthLoginWithAPreregisteredClient(t *testing.T) {
	tokens := &TokenFile{Path: filepath.Join(t.TempDir(), TokenFileName)}
	as := oauthtest.NewAuthServer(t, "agentloop-cli")
	mcpSrv := oauthtest.ProtectMCP(t, as, oauthtest.EchoServer())
	cfg := ServerConfig{Name: "pre", URL: mcpSrv.URL + "/mcp", OAuth: &OAuth{ClientID: "agentloop-cli", Tokens: tokens}}
	res, err := Login(t.Context(), cfg, LoginOptions{Visit: browse(t)})
	if err != nil {
		t.Fatal(err)
	}
	if res.Login.ClientID != "agentloop-cli" || res.Login.Registered {
		t.Fatalf("login %+v", res.Login)
	}
	if regs, _, _ := as.Counts(); regs != 0 {
		t.Fatalf("a configured client_id registered %d clients", regs)
	}
}

// An authorization server that registers no clients dynamically: without
// a client_id the login stops before the browser and says what to set.
func TestOAuthLoginWithoutDynamicRegistration(t *testing.T) {
	as := oauthtest.NewAuthServer(t, "agentloop-cli")
	as.DisableRegistration()
	mcpSrv := oauthtest.ProtectMCP(t, as, oauthtest.EchoServer())
	cfg := ServerConfig{Name: "pre", URL: mcpSrv.URL + "/mcp", OAuth: &OAuth{Tokens: &TokenFile{Path: filepath.Join(t.TempDir(), TokenFileName)}}}
	_, err := Login(t.Context(), cfg, LoginOptions{Visit: func(string) { t.Error("a login that cannot register a client sent the person to a browser") }})
	if err == nil || !strings.Contains(err.Error(), "does not register clients dynamically") || !strings.Contains(err.Error(), "set oauth.client_id") {
		t.Fatalf("Login = %v", err)
	}
}

func TestOAuthLoginToAnOpenServer(t *testing.T) {
	srv := testServer(false)
	ts := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	t.Cleanup(ts.Close)
	cfg := ServerConfig{Name: "open", URL: ts.URL, OAuth: &OAuth{Tokens: &TokenFile{Path: filepath.Join(t.TempDir(), TokenFileName)}}}
	_, err := Login(t.Context(), cfg, LoginOptions{Visit: func(string) { t.Error("a server that asks for no token sent the person to a browser") }})
	if !errors.Is(err, ErrNoLoginNeeded) || !strings.Contains(err.Error(), "remove oauth") {
		t.Fatalf("Login = %v", err)
	}
}

func TestOAuthRefusedLogin(t *testing.T) {
	as := oauthtest.NewAuthServer(t, "someone-else")
	mcpSrv := oauthtest.ProtectMCP(t, as, oauthtest.EchoServer())
	// A client id the authorization server does not know: the browser
	// gets an error page and never comes back; the login gives up when
	// its context ends.
	cfg := ServerConfig{Name: "r", URL: mcpSrv.URL + "/mcp", OAuth: &OAuth{ClientID: "unknown", Tokens: &TokenFile{Path: filepath.Join(t.TempDir(), TokenFileName)}}}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	_, err := Login(ctx, cfg, LoginOptions{Visit: func(u string) {
		resp, err := http.Get(u)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode != http.StatusBadRequest {
				t.Errorf("authorize answered %s", resp.Status)
			}
		}
		cancel()
	}})
	if err == nil || !strings.Contains(err.Error(), "the login was not finished: the browser did not come back to http://127.0.0.1:") {
		t.Fatalf("Login = %v", err)
	}
}

// Two connections whose token the server stopped accepting at once: the
// refresh token is spent once (it rotates), and both go on with the new
// access token.
func TestOAuthConcurrentRefreshSpendsTheRefreshTokenOnce(t *testing.T) {
	tokens := &TokenFile{Path: filepath.Join(t.TempDir(), TokenFileName)}
	as, cfg := oauthServer(t, tokens)
	if _, err := Login(t.Context(), cfg, LoginOptions{Visit: browse(t)}); err != nil {
		t.Fatal(err)
	}
	var servers []*Server
	for range 2 {
		s, err := Connect(t.Context(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		servers = append(servers, s)
	}
	as.ExpireAccessTokens()
	outputs := make(chan string, len(servers))
	for _, s := range servers {
		go func() {
			r, err := byName(t, s.Tools(), "remote__whoami").Call(t.Context(), []byte(`{"text":"both"}`))
			if err != nil {
				outputs <- err.Error()
				return
			}
			outputs <- r.Output
		}()
	}
	for range servers {
		if got := <-outputs; got != "protected says both to tester" {
			t.Errorf("call = %q", got)
		}
	}
	if _, _, refreshes := as.Counts(); refreshes != 1 {
		t.Fatalf("refreshes = %d, want 1", refreshes)
	}
}

// A server on the older HTTP+SSE transport gets the stored token on every
// request (its SDK transport takes no OAuth handler), refreshed when it
// has expired.
func TestOAuthOverTheSSETransport(t *testing.T) {
	tokens := &TokenFile{Path: filepath.Join(t.TempDir(), TokenFileName)}
	as, cfg := oauthServer(t, tokens)
	if _, err := Login(t.Context(), cfg, LoginOptions{Visit: browse(t)}); err != nil {
		t.Fatal(err)
	}
	// The same resource served over SSE; its login is the streamable one's.
	srv := oauthtest.EchoServer()
	sse := httptest.NewServer(auth.RequireBearerToken(as.Verify(cfg.URL), nil)(sdk.NewSSEHandler(func(*http.Request) *sdk.Server { return srv }, nil)))
	t.Cleanup(sse.Close)
	l, _ := tokens.Get(cfg.URL)
	l.URL = sse.URL
	l.Token.Expiry = time.Now().Add(-time.Minute)
	if err := tokens.Put(l); err != nil {
		t.Fatal(err)
	}
	s, err := Connect(t.Context(), ServerConfig{Name: "old", URL: sse.URL, Transport: TransportSSE, OAuth: &OAuth{Tokens: tokens}})
	if err != nil {
		t.Fatalf("Connect over SSE: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	r, err := byName(t, s.Tools(), "old__whoami").Call(t.Context(), []byte(`{"text":"sse"}`))
	// The SSE transport hands the tool no token info ("nobody"); the
	// middleware checked the token of every request.
	if err != nil || r.Output != "protected says sse to nobody" {
		t.Fatalf("call = %+v, %v", r, err)
	}
	if _, _, refreshes := as.Counts(); refreshes != 1 {
		t.Fatalf("refreshes = %d, want 1", refreshes)
	}

	// The server refuses the token (the SSE transport has no OAuth
	// handler to refresh it): the refused stream says to log in again.
	as.RevokeAll()
	_, err = Connect(t.Context(), ServerConfig{Name: "old", URL: sse.URL, Transport: TransportSSE, OAuth: &OAuth{Tokens: tokens}})
	if err == nil || !strings.Contains(err.Error(), `the server refused the OAuth token (HTTP 401): run "agentloop mcp login old"`) {
		t.Fatalf("Connect over SSE with a revoked token = %v", err)
	}
}

// A token file that cannot be read, and a stored token that expired with
// no refresh token, both say what the person has to do.
func TestOAuthStoredTokensThatCannotBeUsed(t *testing.T) {
	dir := t.TempDir()
	bad := &TokenFile{Path: filepath.Join(dir, "bad.json")}
	if err := os.WriteFile(bad.Path, []byte("not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := bad.Get("http://x/mcp"); err == nil || !strings.Contains(err.Error(), "delete it and log in again") {
		t.Errorf("corrupt token file: %v, want an error saying to delete it and log in again", err)
	}

	tokens := &TokenFile{Path: filepath.Join(dir, "tokens.json")}
	cfg := ServerConfig{Name: "remote", URL: "http://127.0.0.1:1/mcp", OAuth: &OAuth{Tokens: tokens}}
	if err := tokens.Put(&StoredLogin{Server: "remote", URL: cfg.URL, TokenURL: "http://127.0.0.1:1/token",
		Token: &oauth2.Token{AccessToken: "old", Expiry: time.Now().Add(-time.Hour)}}); err != nil {
		t.Fatal(err)
	}
	h, err := newOAuthSession(&cfg, http.DefaultClient)
	if err != nil {
		t.Fatal(err)
	}
	_, err = h.Token()
	var login *LoginRequiredError
	if !errors.As(err, &login) || !strings.Contains(err.Error(), "no refresh token") || !strings.Contains(err.Error(), "agentloop mcp login remote") {
		t.Errorf("expired token without a refresh token: %v, want a LoginRequiredError naming the login command", err)
	}
	if _, err := tokens.Delete(cfg.URL); err != nil {
		t.Fatal(err)
	}
	if _, err = h.refresh("old"); !errors.As(err, &login) || !strings.Contains(err.Error(), "logged out") {
		t.Errorf("tokens removed under a session: %v, want a LoginRequiredError saying it was logged out", err)
	}
}

// The person refuses at the authorization server's consent page, or the
// browser comes back without a code: the login fails at once and says to
// run it again.
func TestOAuthLoginRefusedByThePerson(t *testing.T) {
	for _, tc := range []struct{ query, want string }{
		{"error=access_denied&error_description=the+user+said+no", "the authorization server refused the login (access_denied: the user said no)"},
		{"", "the browser came back without an authorization code"},
	} {
		as := oauthtest.NewAuthServer(t)
		mcpSrv := oauthtest.ProtectMCP(t, as, oauthtest.EchoServer())
		cfg := ServerConfig{Name: "r", URL: mcpSrv.URL + "/mcp", OAuth: &OAuth{Tokens: &TokenFile{Path: filepath.Join(t.TempDir(), TokenFileName)}}}
		_, err := Login(t.Context(), cfg, LoginOptions{Visit: func(authURL string) {
			u, err := url.Parse(authURL)
			if err != nil {
				t.Error(err)
				return
			}
			// The consent page sends the browser back without a code.
			back := u.Query().Get("redirect_uri") + "?state=" + url.QueryEscape(u.Query().Get("state"))
			if tc.query != "" {
				back += "&" + tc.query
			}
			resp, err := http.Get(back)
			if err != nil {
				t.Error(err)
				return
			}
			resp.Body.Close()
		}})
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), `run "agentloop mcp login r" again`) {
			t.Errorf("Login = %v, want %q and the command to run again", err, tc.want)
		}
		if l, _ := cfg.OAuth.Tokens.Get(cfg.URL); l != nil {
			t.Errorf("a refused login stored %+v", l)
		}
	}
}
