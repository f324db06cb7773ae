package mcpserver

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/agentloop/agentloop/api"
	"github.com/agentloop/agentloop/assemble"
	"github.com/agentloop/agentloop/service"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Local is how `agentloop mcp` starts sessions on this machine: the
// request is normalised by the same code as POST /v1/sessions
// (assemble.StartDefaults.Task), so it may narrow the defaults and never
// widen them — approval "auto" only when RunUnasked, script: models and
// protocol files only with Defaults.AllowFiles — and it works in Dir or a
// directory inside it.
type Local struct {
	Service  *service.Service
	Defaults assemble.StartDefaults
	// RunUnasked lets a request ask for approval "auto" (agentloop mcp --yes).
	RunUnasked bool
	// Dir is the sessions' workspace: a request's workspace is a
	// directory inside it.
	Dir string
}

// Start starts a session for c (see Config.Start).
func (l Local) Start(ctx context.Context, c service.Caller, _ *mcp.RequestExtra, req api.StartRequest) (string, error) {
	if req.Prompt != "" {
		return "", fmt.Errorf(`"prompt" names a prompt stored on a server; over stdio give "system_prompt" instead`)
	}
	task, err := l.Defaults.Task(req, l.RunUnasked)
	if err != nil {
		return "", err
	}
	if task.Workspace, err = l.workspace(req.Workspace); err != nil {
		return "", err
	}
	started, err := l.Service.Start(ctx, c, task)
	if err != nil {
		return "", err
	}
	return started.ID, nil
}

// workspace is the directory a request's workspace names inside Dir.
func (l Local) workspace(name string) (string, error) {
	root, err := filepath.Abs(l.Dir)
	if err != nil {
		return "", err
	}
	if name == "" {
		return root, nil
	}
	p := name
	if !filepath.IsAbs(p) {
		p = filepath.Join(root, p)
	}
	p = filepath.Clean(p)
	if rel, err := filepath.Rel(root, p); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", &service.Error{Kind: service.ErrForbidden, Msg: fmt.Sprintf("workspace %q is outside %s, the directory this server was started for (agentloop mcp --dir)", name, root)}
	}
	return p, nil
}
