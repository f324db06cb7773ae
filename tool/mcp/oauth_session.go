package mcp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
)

// refreshTimeout bounds one refresh at the token endpoint.
const refreshTimeout = 30 * time.Second

// oauthSession is the SDK's OAuth handler for connections to one server:
// it hands out the stored access token, refreshes it when it has expired
// or the server refuses it, saves what it refreshed, and reports every
// way the stored tokens can fail as a LoginRequiredError. It never starts
// an interactive login: that is Login's job, run by a person.
type oauthSession struct {
	name, url string
	file      *TokenFile
	client    *http.Client // for the token endpoint

	mu  sync.Mutex
	tok *oauth2.Token // the token last handed out
}

var _ auth.OAuthHandler = (*oauthSession)(nil)

// newOAuthSession reads the server's stored login; none stored is a
// LoginRequiredError, found before anything is sent.
func newOAuthSession(cfg *ServerConfig, client *http.Client) (*oauthSession, error) {
	file := cfg.OAuth.tokens()
	l, err := file.Get(cfg.URL)
	if err != nil {
		return nil, fmt.Errorf("MCP server %q: %w", cfg.Name, err)
	}
	if l == nil {
		return nil, &LoginRequiredError{Server: cfg.Name, URL: cfg.URL, Reason: "not logged in (no token stored in " + file.Path + ")"}
	}
	return &oauthSession{name: cfg.Name, url: cfg.URL, file: file, client: client, tok: l.Token}, nil
}

func (h *oauthSession) TokenSource(context.Context) (oauth2.TokenSource, error) { return h, nil }

// Token returns a valid access token, refreshing the stored one when it
// has expired.
func (h *oauthSession) Token() (*oauth2.Token, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.tok.Valid() {
		return h.tok, nil
	}
	return h.refresh(h.tok.AccessToken)
}

// Authorize is called by the SDK's transport when the server answered 401
// or 403. A refused token that can be refreshed is refreshed once and the
// request retried (nil); anything else needs a person to log in again.
func (h *oauthSession) Authorize(_ context.Context, req *http.Request, resp *http.Response) error {
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	h.mu.Lock()
	defer h.mu.Unlock()
	sent := strings.TrimPrefix(req.Header.Get("Authorization"), "Bearer ")
	if resp.StatusCode == http.StatusUnauthorized && sent != "" {
		tok, err := h.refresh(sent)
		if err != nil {
			return err
		}
		if tok.AccessToken != sent {
			return nil // a new token: the transport retries with it
		}
	}
	return &LoginRequiredError{Server: h.name, URL: h.url, Reason: "the server refused the access token" + challengeNote(resp)}
}

// errUnchanged ends an update of the token file without writing it.
var errUnchanged = errors.New("unchanged")

// refresh returns a valid token other than stale: the stored one when
// another connection (or process) has refreshed it already, else a new
// one from the token endpoint, which is saved. It holds the token file's
// lock throughout, so one refresh token is never spent twice.
func (h *oauthSession) refresh(stale string) (*oauth2.Token, error) {
	var out *oauth2.Token
	err := h.file.update(func(all map[string]*StoredLogin) error {
		l := all[h.url]
		if l == nil {
			return &LoginRequiredError{Server: h.name, URL: h.url, Reason: "logged out (its tokens were removed from " + h.file.Path + ")"}
		}
		if l.Token.Valid() && l.Token.AccessToken != stale {
			out = l.Token
			return errUnchanged
		}
		if l.Token.RefreshToken == "" {
			return &LoginRequiredError{Server: h.name, URL: h.url, Reason: "its access token expired and the authorization server gave no refresh token"}
		}
		ctx, cancel := context.WithTimeout(context.WithValue(context.Background(), oauth2.HTTPClient, h.client), refreshTimeout)
		defer cancel()
		// A token with no access token makes the source refresh, even when
		// the server refused one before its expiry; a response without a
		// refresh token keeps this one.
		tok, err := l.config().TokenSource(ctx, &oauth2.Token{RefreshToken: l.Token.RefreshToken}).Token()
		if err != nil {
			if reason, ok := refusedGrant(err); ok {
				return &LoginRequiredError{Server: h.name, URL: h.url, Reason: "the authorization server refused the refresh token (" + reason + ")"}
			}
			return fmt.Errorf("MCP server %q: refreshing its OAuth token at %s: %w", h.name, l.TokenURL, err)
		}
		l.Token, l.RefreshedAt, out = tok, time.Now().UTC(), tok
		return nil
	})
	if err != nil && !errors.Is(err, errUnchanged) {
		return nil, err
	}
	h.tok = out
	return out, nil
}

// challengeNote describes a refusal: its status and the error its
// WWW-Authenticate challenge names.
func challengeNote(resp *http.Response) string {
	note := fmt.Sprintf(" (HTTP %d", resp.StatusCode)
	cs, _ := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
	for _, c := range cs {
		if c.Scheme != "bearer" {
			continue
		}
		if e := c.Params["error"]; e != "" {
			note += ": " + e
		}
		if d := c.Params["error_description"]; d != "" {
			note += ", " + d
		}
		if s := c.Params["scope"]; s != "" && resp.StatusCode == http.StatusForbidden {
			note += "; it asks for scope " + s
		}
	}
	return note + ")"
}
