// Package oauthtest runs, for tests, an OAuth 2.1 authorization server and
// an MCP server it protects, speaking the real protocols on loopback the
// way a remote MCP server that follows the MCP authorization specification
// does:
//
//   - the authorization server publishes its metadata (RFC 8414), registers
//     clients dynamically (RFC 7591), authorizes like a consent page a
//     person approves at once (a redirect straight back with a code), and
//     exchanges codes (PKCE S256 checked) and refresh tokens (rotated: each
//     one works once) for tokens at its token endpoint;
//   - the MCP server refuses requests without a valid access token with the
//     SDK's auth.RequireBearerToken (401 and a WWW-Authenticate challenge)
//     and publishes its protected resource metadata (RFC 9728) with the
//     SDK's ProtectedResourceMetadataHandler.
//
// Tests can expire or revoke tokens on the server side and count what the
// client did.
package oauthtest

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// Scope is the scope the protected MCP server asks for.
const Scope = "tools:call"

// AuthServer is the authorization server.
type AuthServer struct {
	*httptest.Server
	// TokenLifetime is how long access tokens are valid (default 1h).
	TokenLifetime time.Duration

	mu            sync.Mutex
	clients       map[string]client
	codes         map[string]grant
	access        map[string]issued
	refresh       map[string]grant
	registrations int
	authorized    int
	refreshed     int
	noDCR         bool // registration is not advertised
}

type client struct {
	redirects []string // empty: any loopback redirect (a pre-registered native client)
	secret    string
}

// grant is what a code or a refresh token stands for.
type grant struct {
	client, redirect, challenge, resource, scope string
}

type issued struct {
	grant
	expires time.Time
}

// NewAuthServer starts an authorization server; preregistered lists
// client ids it knows without registration (public clients).
func NewAuthServer(t testing.TB, preregistered ...string) *AuthServer {
	as := &AuthServer{TokenLifetime: time.Hour, clients: map[string]client{}, codes: map[string]grant{}, access: map[string]issued{}, refresh: map[string]grant{}}
	for _, id := range preregistered {
		as.clients[id] = client{}
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", as.metadata)
	mux.HandleFunc("POST /register", as.register)
	mux.HandleFunc("GET /authorize", as.authorize)
	mux.HandleFunc("POST /token", as.token)
	as.Server = httptest.NewServer(mux)
	t.Cleanup(as.Close)
	return as
}

func (as *AuthServer) metadata(w http.ResponseWriter, _ *http.Request) {
	md := oauthex.AuthServerMeta{
		Issuer:                            as.URL,
		AuthorizationEndpoint:             as.URL + "/authorize",
		TokenEndpoint:                     as.URL + "/token",
		RegistrationEndpoint:              as.URL + "/register",
		ResponseTypesSupported:            []string{"code"},
		GrantTypesSupported:               []string{"authorization_code", "refresh_token"},
		CodeChallengeMethodsSupported:     []string{"S256"},
		TokenEndpointAuthMethodsSupported: []string{"none"},
		ScopesSupported:                   []string{Scope, "offline_access"},
	}
	as.mu.Lock()
	if as.noDCR {
		md.RegistrationEndpoint = ""
	}
	as.mu.Unlock()
	writeJSON(w, http.StatusOK, md)
}

// DisableRegistration stops advertising dynamic client registration, as
// an authorization server that only knows clients registered in advance.
func (as *AuthServer) DisableRegistration() {
	as.mu.Lock()
	defer as.mu.Unlock()
	as.noDCR = true
}

func (as *AuthServer) register(w http.ResponseWriter, r *http.Request) {
	var md oauthex.ClientRegistrationMetadata
	if err := json.NewDecoder(r.Body).Decode(&md); err != nil || len(md.RedirectURIs) == 0 {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_client_metadata", "error_description": "redirect_uris are required"})
		return
	}
	as.mu.Lock()
	as.registrations++
	id := fmt.Sprintf("client-%d", as.registrations)
	as.clients[id] = client{redirects: md.RedirectURIs}
	as.mu.Unlock()
	writeJSON(w, http.StatusCreated, map[string]any{
		"client_id": id, "client_id_issued_at": time.Now().Unix(), "redirect_uris": md.RedirectURIs,
		"token_endpoint_auth_method": "none", "grant_types": md.GrantTypes, "response_types": md.ResponseTypes, "client_name": md.ClientName,
	})
}

// authorize approves at once, as a consent page a person accepts: it
// redirects straight back to the client with a code.
func (as *AuthServer) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	as.mu.Lock()
	defer as.mu.Unlock()
	c, known := as.clients[q.Get("client_id")]
	redirect := q.Get("redirect_uri")
	switch {
	case !known:
		http.Error(w, "unknown client_id", http.StatusBadRequest)
		return
	case !allowedRedirect(c, redirect):
		http.Error(w, "redirect_uri is not registered", http.StatusBadRequest)
		return
	}
	back, _ := url.Parse(redirect)
	v := url.Values{"state": {q.Get("state")}}
	switch {
	case q.Get("response_type") != "code":
		v.Set("error", "unsupported_response_type")
	case q.Get("code_challenge") == "" || q.Get("code_challenge_method") != "S256":
		v.Set("error", "invalid_request")
		v.Set("error_description", "PKCE with S256 is required")
	default:
		code := rand.Text()
		as.codes[code] = grant{client: q.Get("client_id"), redirect: redirect, challenge: q.Get("code_challenge"), resource: q.Get("resource"), scope: q.Get("scope")}
		as.authorized++
		v.Set("code", code)
	}
	back.RawQuery = v.Encode()
	http.Redirect(w, r, back.String(), http.StatusFound)
}

func allowedRedirect(c client, redirect string) bool {
	if len(c.redirects) > 0 {
		return slices.Contains(c.redirects, redirect)
	}
	u, err := url.Parse(redirect)
	return err == nil && u.Scheme == "http" && u.Hostname() == "127.0.0.1"
}

func (as *AuthServer) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_request"})
		return
	}
	as.mu.Lock()
	defer as.mu.Unlock()
	refuse := func(code, desc string) {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": code, "error_description": desc})
	}
	// A public client names itself in the form, or (oauth2's first try)
	// as the user of HTTP basic authentication.
	clientID := r.PostForm.Get("client_id")
	if user, _, ok := r.BasicAuth(); ok {
		clientID, _ = url.QueryUnescape(user)
	}
	var g grant
	switch r.PostForm.Get("grant_type") {
	case "authorization_code":
		code := r.PostForm.Get("code")
		var ok bool
		if g, ok = as.codes[code]; !ok {
			refuse("invalid_grant", "unknown or used code")
			return
		}
		delete(as.codes, code) // a code works once
		sum := sha256.Sum256([]byte(r.PostForm.Get("code_verifier")))
		switch {
		case g.client != clientID:
			refuse("invalid_grant", "the code was issued to another client")
			return
		case g.redirect != r.PostForm.Get("redirect_uri"):
			refuse("invalid_grant", "redirect_uri differs from the authorization request's")
			return
		case base64.RawURLEncoding.EncodeToString(sum[:]) != g.challenge:
			refuse("invalid_grant", "code_verifier does not match the code_challenge")
			return
		}
	case "refresh_token":
		rt := r.PostForm.Get("refresh_token")
		var ok bool
		if g, ok = as.refresh[rt]; !ok {
			refuse("invalid_grant", "unknown, used or revoked refresh token")
			return
		}
		if g.client != clientID {
			refuse("invalid_grant", "the refresh token was issued to another client")
			return
		}
		delete(as.refresh, rt) // rotated: each refresh token works once
		as.refreshed++
	default:
		refuse("unsupported_grant_type", r.PostForm.Get("grant_type"))
		return
	}
	access, refresh := "at-"+rand.Text(), "rt-"+rand.Text()
	as.access[access] = issued{grant: g, expires: time.Now().Add(as.TokenLifetime)}
	as.refresh[refresh] = g
	writeJSON(w, http.StatusOK, map[string]any{
		"access_token": access, "token_type": "Bearer", "expires_in": int(as.TokenLifetime.Seconds()),
		"refresh_token": refresh, "scope": g.scope,
	})
}

// Verify is the protected server's token check: the token must have been
// issued here, not expired, for resource.
func (as *AuthServer) Verify(resource string) auth.TokenVerifier {
	return func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		as.mu.Lock()
		defer as.mu.Unlock()
		t, ok := as.access[token]
		if !ok || time.Now().After(t.expires) {
			return nil, fmt.Errorf("%w: unknown or expired access token", auth.ErrInvalidToken)
		}
		if t.resource != resource {
			return nil, fmt.Errorf("%w: the token is for %q, not %q", auth.ErrInvalidToken, t.resource, resource)
		}
		return &auth.TokenInfo{Scopes: strings.Fields(t.scope), Expiration: t.expires, UserID: "tester"}, nil
	}
}

// ExpireAccessTokens makes every access token issued so far expired (the
// refresh tokens keep working).
func (as *AuthServer) ExpireAccessTokens() {
	as.mu.Lock()
	defer as.mu.Unlock()
	for k, t := range as.access {
		t.expires = time.Now().Add(-time.Second)
		as.access[k] = t
	}
}

// RevokeAll revokes every access and refresh token.
func (as *AuthServer) RevokeAll() {
	as.mu.Lock()
	defer as.mu.Unlock()
	clear(as.access)
	clear(as.refresh)
}

// Counts says how many clients registered, codes were issued and refresh
// tokens were exchanged.
func (as *AuthServer) Counts() (registrations, authorizations, refreshes int) {
	as.mu.Lock()
	defer as.mu.Unlock()
	return as.registrations, as.authorized, as.refreshed
}

// ProtectMCP serves srv over streamable HTTP at URL + "/mcp", requiring
// tokens of as for that resource and the scope Scope, and its protected
// resource metadata at /.well-known/oauth-protected-resource/mcp. It
// returns the server; the MCP endpoint is its URL + "/mcp".
func ProtectMCP(t testing.TB, as *AuthServer, srv *sdk.Server) *httptest.Server {
	mux := http.NewServeMux()
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	resource := ts.URL + "/mcp"
	metadataURL := ts.URL + "/.well-known/oauth-protected-resource/mcp"
	mux.Handle("/.well-known/oauth-protected-resource/mcp", auth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{
		Resource:               resource,
		AuthorizationServers:   []string{as.URL},
		ScopesSupported:        []string{Scope},
		BearerMethodsSupported: []string{"header"},
	}))
	mcp := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)
	mux.Handle("/mcp", auth.RequireBearerToken(as.Verify(resource), &auth.RequireBearerTokenOptions{ResourceMetadataURL: metadataURL, Scopes: []string{Scope}})(mcp))
	return ts
}

// EchoServer is an MCP server with one tool, "whoami", that answers with
// the text it is given and the user its token belongs to.
func EchoServer() *sdk.Server {
	srv := sdk.NewServer(&sdk.Implementation{Name: "protected", Version: "1"}, nil)
	type in struct {
		Text string `json:"text"`
	}
	sdk.AddTool(srv, &sdk.Tool{Name: "whoami", Description: "Says who the caller is.", Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, req *sdk.CallToolRequest, args in) (*sdk.CallToolResult, any, error) {
			user := "nobody"
			if req.Extra != nil && req.Extra.TokenInfo != nil { // the SSE transport passes no token info
				user = req.Extra.TokenInfo.UserID
			}
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "protected says " + args.Text + " to " + user}}}, nil, nil
		})
	return srv
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
