package mcp

import (
	"context"
	"errors"
	"fmt"
	"html"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
)

// LoginOptions are a login's ways to reach the person logging in.
type LoginOptions struct {
	// Visit is called with the authorization URL the person must open in a
	// browser (show it; maybe open a browser too). Required.
	Visit func(authURL string)
	// RedirectListening, if set, is told where the browser will be sent
	// back to, once that address listens.
	RedirectListening func(redirectURL string)
}

// LoginResult is what a successful login stored, and what the server
// offered with the new token.
type LoginResult struct {
	Login *StoredLogin
	// Tools is how many tools the server listed with the new token.
	Tools int
}

// Login runs the OAuth authorization code flow with PKCE for a URL server
// configured with OAuth, the way the MCP authorization specification lays
// it out, using the official SDK's AuthorizationCodeHandler: the first
// request is refused with 401, the handler reads the protected resource
// metadata and the authorization server's metadata, registers a client
// (or uses OAuth.ClientID), and calls Visit with the authorization URL.
// The browser comes back to a listener on 127.0.0.1 at a random port,
// with the code; the handler exchanges it for tokens. Login then lists
// the server's tools with the new token and, only when that worked,
// stores the token set (and the client) in the OAuth's TokenFile under
// the server's URL. A server that does not ask for a token gives
// ErrNoLoginNeeded. ctx bounds the whole login, the person included.
func Login(ctx context.Context, cfg ServerConfig, opts LoginOptions) (*LoginResult, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if cfg.URL == "" || cfg.OAuth == nil {
		return nil, fmt.Errorf("MCP server %q: login is for servers reached by url with oauth set", cfg.Name)
	}
	if opts.Visit == nil {
		return nil, errors.New("mcp.Login: LoginOptions.Visit is required")
	}
	secret, err := cfg.OAuth.clientSecret()
	if err != nil {
		return nil, fmt.Errorf("MCP server %q: %w", cfg.Name, err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("MCP server %q: listening for the browser's redirect: %w", cfg.Name, err)
	}
	cb := &redirectReceiver{server: cfg.Name, results: make(chan redirectResult, 1)}
	redirect := "http://" + ln.Addr().String() + redirectPath
	hs := &http.Server{Handler: cb, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = hs.Serve(ln) }()
	defer hs.Close()
	if opts.RedirectListening != nil {
		opts.RedirectListening(redirect)
	}

	s := &Server{cfg: cfg}
	mcpClient, err := s.httpClient()
	if err != nil {
		return nil, err
	}
	oauthClient := s.oauthClient()

	var mu sync.Mutex
	var granted *oauth2.Config
	var tokens oauth2.TokenSource
	var sentToBrowser atomic.Bool
	hc := &auth.AuthorizationCodeHandlerConfig{
		RedirectURL: redirect,
		AuthorizationCodeFetcher: func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
			sentToBrowser.Store(true)
			opts.Visit(args.URL)
			select {
			case r := <-cb.results:
				return r.result, r.err
			case <-ctx.Done():
				return nil, fmt.Errorf("waiting for the browser to come back to %s: %w", redirect, context.Cause(ctx))
			}
		},
		RequestRefreshToken: true,
		Client:              oauthClient,
		NewTokenSource: func(ctx context.Context, c *oauth2.Config, t *oauth2.Token) (oauth2.TokenSource, error) {
			ts := oauth2.ReuseTokenSource(t, c.TokenSource(ctx, t))
			mu.Lock()
			granted, tokens = c, ts
			mu.Unlock()
			return ts, nil
		},
	}
	if cfg.OAuth.ClientID != "" {
		hc.PreregisteredClient = &oauthex.ClientCredentials{ClientID: cfg.OAuth.ClientID}
		if secret != "" {
			hc.PreregisteredClient.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: secret}
		}
	} else {
		hc.DynamicClientRegistrationConfig = &auth.DynamicClientRegistrationConfig{Metadata: &oauthex.ClientRegistrationMetadata{
			ClientName:              "agentloop",
			SoftwareID:              "agentloop",
			RedirectURIs:            []string{redirect},
			GrantTypes:              []string{"authorization_code", "refresh_token"},
			ResponseTypes:           []string{"code"},
			TokenEndpointAuthMethod: "none", // a public client: PKCE protects the code
		}}
	}
	if len(cfg.OAuth.Scopes) > 0 {
		scopes := append([]string(nil), cfg.OAuth.Scopes...)
		hc.ScopeFilter = func([]string) []string { return scopes }
	}
	handler, err := auth.NewAuthorizationCodeHandler(hc)
	if err != nil {
		return nil, fmt.Errorf("MCP server %q: %w", cfg.Name, err)
	}

	client := sdk.NewClient(&sdk.Implementation{Name: "agentloop", Version: "1"}, nil)
	sess, err := client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: cfg.URL, HTTPClient: mcpClient, OAuthHandler: handler, DisableStandaloneSSE: true}, nil)
	if err != nil && ctx.Err() != nil {
		if sentToBrowser.Load() {
			return nil, fmt.Errorf("MCP server %q: the login was not finished: the browser did not come back to %s (%w)", cfg.Name, redirect, context.Cause(ctx))
		}
		return nil, fmt.Errorf("MCP server %q: the login was not finished: no authorization page was reached from %s (%w)", cfg.Name, cfg.URL, context.Cause(ctx))
	}
	if err != nil {
		hint := ""
		if cfg.OAuth.ClientID == "" && strings.Contains(err.Error(), "no configured client registration methods") {
			hint = "; the authorization server does not register clients dynamically: register agentloop with it (redirect URI http://127.0.0.1/callback, any port) and set oauth.client_id"
		}
		return nil, fmt.Errorf("MCP server %q: logging in at %s: %w%s", cfg.Name, cfg.URL, err, hint)
	}
	defer sess.Close()
	listed, err := sess.ListTools(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("MCP server %q: listing its tools with the new token: %w", cfg.Name, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if tokens == nil {
		return nil, fmt.Errorf("MCP server %q at %s: %w; it needs no login (remove oauth from its configuration)", cfg.Name, cfg.URL, ErrNoLoginNeeded)
	}
	tok, err := tokens.Token()
	if err != nil {
		return nil, fmt.Errorf("MCP server %q: %w", cfg.Name, err)
	}
	l := &StoredLogin{
		Server:       cfg.Name,
		URL:          cfg.URL,
		ClientID:     granted.ClientID,
		ClientSecret: granted.ClientSecret,
		Registered:   cfg.OAuth.ClientID == "",
		AuthStyle:    granted.Endpoint.AuthStyle,
		AuthURL:      granted.Endpoint.AuthURL,
		TokenURL:     granted.Endpoint.TokenURL,
		Scopes:       granted.Scopes,
		Token:        tok,
		LoggedInAt:   time.Now().UTC(),
	}
	if err := cfg.OAuth.tokens().Put(l); err != nil {
		return nil, fmt.Errorf("MCP server %q: %w", cfg.Name, err)
	}
	return &LoginResult{Login: l, Tools: len(listed.Tools)}, nil
}

// redirectPath is where the browser is sent back to, on the loopback
// listener.
const redirectPath = "/callback"

type redirectResult struct {
	result *auth.AuthorizationResult
	err    error
}

// redirectReceiver takes the first redirect that reaches redirectPath and
// hands it to the waiting login; later ones are told the login is over.
type redirectReceiver struct {
	server  string
	results chan redirectResult // capacity 1: the first redirect never blocks
}

func (rr *redirectReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != redirectPath {
		http.NotFound(w, r)
		return
	}
	q := r.URL.Query()
	res := redirectResult{result: &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}}
	page := "agentloop received the authorization for MCP server " + rr.server + ". You can close this tab and return to the terminal."
	switch {
	case q.Get("error") != "":
		reason := q.Get("error")
		if d := q.Get("error_description"); d != "" {
			reason += ": " + d
		}
		res = redirectResult{err: fmt.Errorf("the authorization server refused the login (%s): run \"agentloop mcp login %s\" again and grant the access it asks for", reason, rr.server)}
		page = "agentloop: the login to MCP server " + rr.server + " was refused (" + reason + ")."
	case res.result.Code == "":
		res = redirectResult{err: fmt.Errorf("the browser came back without an authorization code: run \"agentloop mcp login %s\" again", rr.server)}
		page = "agentloop: the browser came back without an authorization code."
	}
	select {
	case rr.results <- res:
	default:
		page = "agentloop: this login is already finished."
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	fmt.Fprintf(w, "<!doctype html><title>agentloop</title><p>%s</p>\n", html.EscapeString(page))
}
