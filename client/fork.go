package client

import (
	"context"
	"net/url"

	"github.com/agentloop/agentloop/api"
)

// Fork starts a new session from session id's log up to the end of step
// req.At, in a new workspace holding that step's files.
func (c *Client) Fork(ctx context.Context, id string, req api.ForkRequest) (api.Created, error) {
	var out api.Created
	return out, c.do(ctx, "POST", "/v1/sessions/"+url.PathEscape(id)+"/fork", req, &out)
}

// Forks lists the sessions forked from session id (its direct forks),
// newest first, at most limit (0: the server's default).
func (c *Client) Forks(ctx context.Context, id string, limit int) ([]api.Summary, error) {
	return c.Sessions(ctx, Filter{ForkedFrom: id, Limit: limit})
}

// Compare sets sessions a and b side by side: outcomes, steps and the
// diff of their final workspaces.
func (c *Client) Compare(ctx context.Context, a, b string) (api.Comparison, error) {
	var out api.Comparison
	q := url.Values{"a": {a}, "b": {b}}
	return out, c.do(ctx, "GET", "/v1/sessions/compare?"+q.Encode(), nil, &out)
}
