package mcp

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"

	"golang.org/x/oauth2"
)

// OAuth says a URL server is reached with OAuth 2.1 access tokens, as the
// MCP authorization specification describes: the server answers 401 with
// a WWW-Authenticate challenge pointing at its protected resource metadata
// (RFC 9728), which names an authorization server; a person logs in once
// with Login (agentloop mcp login NAME: authorization code with PKCE, the
// client registered dynamically (RFC 7591) unless ClientID is given), and
// the token set is kept in a TokenFile, keyed by the server's URL.
//
// Connections then send the stored access token, refresh it with the
// stored refresh token when it has expired (or when the server refuses
// it), and save the refreshed set. Without a usable token a connection
// fails at once with a LoginRequiredError naming the command to run; it
// never opens a browser or waits for a person.
type OAuth struct {
	// ClientID is a client registered in advance with the authorization
	// server; empty: register one dynamically at login.
	ClientID string
	// ClientSecretEnv names the environment variable holding ClientID's
	// secret, for a confidential client; empty: a public client.
	ClientSecretEnv string
	// Scopes replaces the scopes the server asks for (its challenge or
	// its metadata's scopes_supported) at login.
	Scopes []string
	// Tokens is where token sets are kept; nil: DefaultTokenFile().
	Tokens *TokenFile
}

// tokens is the file o's token sets are kept in.
func (o *OAuth) tokens() *TokenFile {
	if o.Tokens != nil {
		return o.Tokens
	}
	return DefaultTokenFile()
}

// clientSecret reads ClientSecretEnv; a variable named but empty is an
// error, so a missing secret is reported before the browser opens.
func (o *OAuth) clientSecret() (string, error) {
	if o.ClientSecretEnv == "" {
		return "", nil
	}
	v := strings.TrimSpace(os.Getenv(o.ClientSecretEnv))
	if v == "" {
		return "", fmt.Errorf("client_secret_env: $%s is not set or empty; export the client's secret in it", o.ClientSecretEnv)
	}
	return v, nil
}

func (cfg *ServerConfig) validateOAuth() error {
	if cfg.OAuth == nil {
		return nil
	}
	if cfg.URL == "" {
		return fmt.Errorf("MCP server %q: oauth is for servers reached by url", cfg.Name)
	}
	if cfg.BearerTokenEnv != "" {
		return fmt.Errorf("MCP server %q: set either oauth or bearer_token_env, not both", cfg.Name)
	}
	for k := range cfg.Headers {
		if strings.EqualFold(k, "Authorization") {
			return fmt.Errorf("MCP server %q: set either oauth or an Authorization header, not both", cfg.Name)
		}
	}
	if cfg.OAuth.ClientSecretEnv != "" && cfg.OAuth.ClientID == "" {
		return fmt.Errorf("MCP server %q: oauth: client_secret_env needs a client_id", cfg.Name)
	}
	return nil
}

// LoginRequiredError says a server's stored OAuth tokens cannot be used
// (none stored, refused, or expired with no way to refresh them) and a
// person has to log in again.
type LoginRequiredError struct {
	Server string // the configured name
	URL    string
	Reason string
}

func (e *LoginRequiredError) Error() string {
	return fmt.Sprintf("MCP server %q (%s) needs a login: %s; run \"agentloop mcp login %s\"", e.Server, e.URL, e.Reason, e.Server)
}

// ErrNoLoginNeeded is returned by Login when the server answered without
// asking for a token.
var ErrNoLoginNeeded = errors.New("the server answered without asking for authorization")

// refusedGrant reports whether err is the authorization server refusing a
// refresh token (RFC 6749 section 5.2 invalid_grant): revoked, expired or
// rotated away. Nothing but a new login fixes that.
func refusedGrant(err error) (string, bool) {
	var re *oauth2.RetrieveError
	if !errors.As(err, &re) {
		return "", false
	}
	if re.ErrorCode != "invalid_grant" && re.ErrorCode != "unauthorized_client" && re.ErrorCode != "invalid_client" {
		return "", false
	}
	reason := re.ErrorCode
	if re.ErrorDescription != "" {
		reason += ": " + re.ErrorDescription
	}
	return reason, true
}

// oauthClient is the HTTP client for the authorization server: the
// configured client's transport, without the MCP server's headers.
func (s *Server) oauthClient() *http.Client {
	client := &http.Client{}
	if s.cfg.HTTPClient != nil {
		*client = *s.cfg.HTTPClient
	}
	return withTraceContext(client)
}
