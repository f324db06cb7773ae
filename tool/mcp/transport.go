package mcp

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync/atomic"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/oauth2"
)

// dialURL reaches a URL server and initialises the MCP session. With no
// transport configured it speaks streamable HTTP first and, when the
// server answers that first POST with a 4xx status other than 401, 403
// and 429 (a server from before streamable HTTP), opens the older HTTP+SSE
// transport at the same URL instead, as the MCP specification's
// backwards-compatibility section describes. The transport that worked is
// used again on reconnects.
func (s *Server) dialURL(ctx context.Context, c *conn) (*conn, error) {
	client, err := s.httpClient()
	if err != nil {
		return nil, err
	}
	rec := &statusRecorder{base: client.Transport}
	if rec.base == nil {
		rec.base = http.DefaultTransport
	}
	if env := s.cfg.BearerTokenEnv; env != "" {
		tok := strings.TrimSpace(os.Getenv(env))
		if tok == "" {
			return nil, fmt.Errorf("MCP server %q: bearer_token_env: $%s is not set or empty; export the server's access token in it", s.cfg.Name, env)
		}
		rec.authorization = "Bearer " + tok
	}
	client.Transport = rec
	c.url = s.cfg.URL
	var oauth *oauthSession
	if s.cfg.OAuth != nil {
		if oauth, err = newOAuthSession(&s.cfg, s.oauthClient()); err != nil {
			return nil, err
		}
		// The SSE transport takes no OAuth handler: the recorder sends
		// the token there (streamable HTTP's transport sends its own).
		rec.tokens = oauth
	}

	mode := s.cfg.Transport
	if mode == "" {
		mode = s.spoken
	}
	note := " (SSE transport)"
	if mode != TransportSSE {
		st := &sdk.StreamableClientTransport{Endpoint: s.cfg.URL, HTTPClient: client, DisableStandaloneSSE: true}
		if oauth != nil {
			st.OAuthHandler = oauth
		}
		sess, err := s.client.Connect(ctx, st, nil)
		if err == nil {
			s.spoken = TransportStreamable
			return c.attach(sess), nil
		}
		status := int(rec.firstPost.Load())
		if mode != "" || ctx.Err() != nil || !oldServerStatus(status) {
			return nil, s.urlError(err, int(rec.refused.Load()), "")
		}
		if l := s.cfg.Logger; l != nil {
			l.Info("MCP server refused streamable HTTP; trying the HTTP+SSE transport", "server", s.cfg.Name, "status", status)
		}
		note = fmt.Sprintf(" (streamable HTTP was refused with HTTP %d, then SSE failed)", status)
	}
	sess, err := s.client.Connect(ctx, s.sseTransport(client), nil)
	if err != nil {
		return nil, s.urlError(err, int(rec.refused.Load()), note)
	}
	s.spoken = TransportSSE
	return c.attach(sess), nil
}

// sseTransport is the SDK's SSE client transport, its stream opened under
// a context that lives until the connection is closed (or the Server is),
// not under the dial's: the stream carries every reply for the session.
func (s *Server) sseTransport(client *http.Client) sdk.Transport {
	return streamTransport{Transport: &sdk.SSEClientTransport{Endpoint: s.cfg.URL, HTTPClient: client}, life: s.base}
}

type streamTransport struct {
	sdk.Transport
	life context.Context
}

// Connect opens the stream; ctx bounds only the opening.
func (t streamTransport) Connect(ctx context.Context) (sdk.Connection, error) {
	lctx, cancel := context.WithCancel(t.life)
	stop := context.AfterFunc(ctx, cancel)
	conn, err := t.Transport.Connect(lctx)
	if !stop() {
		err = ctx.Err() // the opening took too long or was given up
		if conn != nil {
			_ = conn.Close()
		}
	}
	if err != nil {
		cancel()
		return nil, err
	}
	return cancelOnClose{Connection: conn, cancel: cancel}, nil
}

// cancelOnClose ends the stream's context when the connection closes.
type cancelOnClose struct {
	sdk.Connection
	cancel context.CancelFunc
}

func (c cancelOnClose) Close() error {
	err := c.Connection.Close()
	c.cancel()
	return err
}

// oldServerStatus reports whether an answer to the initialising POST
// means "this server does not speak streamable HTTP" rather than a refusal
// of the caller (credentials, rate limit) or a failure.
func oldServerStatus(status int) bool {
	switch status {
	case http.StatusUnauthorized, http.StatusForbidden, http.StatusTooManyRequests:
		return false
	}
	return status >= 400 && status < 500
}

// urlError explains a failed connection; refused is the first 401 or 403
// answer, if any.
func (s *Server) urlError(err error, refused int, note string) error {
	var login *LoginRequiredError
	if errors.As(err, &login) {
		return login // it names the server and the remedy
	}
	hint := ""
	switch {
	case refused != 0 && s.cfg.OAuth != nil:
		hint = fmt.Sprintf("; the server refused the OAuth token (HTTP %d): run \"agentloop mcp login %s\"", refused, s.cfg.Name)
	case refused != 0:
		hint = fmt.Sprintf("; the server refused the credentials (HTTP %d): give a token with bearer_token_env or an Authorization header, or set oauth: true and run \"agentloop mcp login %s\"", refused, s.cfg.Name)
	}
	return fmt.Errorf("MCP server %q: connecting to %s%s: %w%s", s.cfg.Name, s.cfg.URL, note, err, hint)
}

// attach makes sess the connection's session and closes done when it ends.
func (c *conn) attach(sess *sdk.ClientSession) *conn {
	c.sess = sess
	go func() {
		_ = sess.Wait()
		close(c.done)
	}()
	return c
}

// statusRecorder adds the bearer token to every request and remembers the
// status of the first POST answered, which tells an old SSE-only server
// from a refusal, and the first refusal of the credentials (401 or 403)
// of any request: the SSE transport's first request is a GET.
type statusRecorder struct {
	base          http.RoundTripper
	authorization string
	// tokens, when set, gives the OAuth access token of requests that
	// carry no Authorization header (the SSE transport's).
	tokens    oauth2.TokenSource
	firstPost atomic.Int32
	refused   atomic.Int32
}

func (r *statusRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	if r.authorization != "" {
		req = req.Clone(req.Context())
		req.Header.Set("Authorization", r.authorization)
	} else if r.tokens != nil && req.Header.Get("Authorization") == "" {
		tok, err := r.tokens.Token()
		if err != nil {
			return nil, err
		}
		req = req.Clone(req.Context())
		tok.SetAuthHeader(req)
	}
	resp, err := r.base.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	if req.Method == http.MethodPost {
		r.firstPost.CompareAndSwap(0, int32(resp.StatusCode))
	}
	if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden {
		r.refused.CompareAndSwap(0, int32(resp.StatusCode))
	}
	return resp, err
}
