package client

import (
	"context"
	"net/url"

	"github.com/agentloop/agentloop/api"
)

// Rewind takes a stopped session back to the end of step req.At, its
// workspace files included, or with req.DryRun says what that changes
// (POST /v1/sessions/{id}/rewind).
func (c *Client) Rewind(ctx context.Context, id string, req api.RewindRequest) (api.Rewound, error) {
	var out api.Rewound
	return out, c.do(ctx, "POST", "/v1/sessions/"+url.PathEscape(id)+"/rewind", req, &out)
}
