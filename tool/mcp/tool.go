package mcp

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentloop/agentloop/model"
	"github.com/agentloop/agentloop/tool"
)

// MaxNameLength is the longest tool name offered to a model.
const MaxNameLength = 64

// Tool is one tool of an MCP server. Besides tool.Tool it declares its
// effect (tool.Effector) and whether it is idempotent (tool.Idempotent).
type Tool struct {
	srv        *Server
	spec       model.ToolSpec
	remote     string
	effect     tool.Effect
	idempotent bool
}

var (
	_ tool.Tool       = (*Tool)(nil)
	_ tool.Effector   = (*Tool)(nil)
	_ tool.Idempotent = (*Tool)(nil)
)

// Spec returns the name offered to the model (prefixed and sanitised),
// the server's description and its input schema (made to compile).
func (t *Tool) Spec() model.ToolSpec { return t.spec }

// Effect is the configured effect, else read for tools annotated
// readOnlyHint, else execute.
func (t *Tool) Effect() tool.Effect { return t.effect }

// Idempotent is true for tools annotated idempotentHint or readOnlyHint.
func (t *Tool) Idempotent() bool { return t.idempotent }

// RemoteName is the tool's name on its server.
func (t *Tool) RemoteName() string { return t.remote }

// ServerName is the name of the server the tool belongs to.
func (t *Tool) ServerName() string { return t.srv.cfg.Name }

// Call calls the tool on its server. Text content is joined; images are
// passed on as images and described in the text; audio and resources are
// summarised; a result flagged isError, a server that refuses the call and
// a server that is not running all come back as error results. A call of
// a read-only or idempotent tool whose connection is lost is sent once
// more on a new connection. Only the end of ctx is returned as an error.
func (t *Tool) Call(ctx context.Context, args json.RawMessage) (tool.Result, error) {
	return t.srv.call(ctx, t.remote, args, t.idempotent)
}

// call sends the call; when repeatable (the tool says running it twice is
// harmless) and the connection is lost during the call, it reconnects (if
// reconnects are left) and sends it once more.
func (s *Server) call(ctx context.Context, name string, args json.RawMessage, repeatable bool) (tool.Result, error) {
	if s.cfg.Confine != nil {
		if err := confined(args, s.cfg.Confine); err != nil {
			return tool.Result{Output: fmt.Sprintf("MCP tool %q of server %q: %v; use a path inside the workspace", name, s.cfg.Name, err), IsError: true}, nil
		}
	}
	if len(strings.TrimSpace(string(args))) == 0 || strings.TrimSpace(string(args)) == "null" {
		args = json.RawMessage(`{}`)
	}
	for attempt := 0; ; attempt++ {
		c, err := s.live(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return tool.Result{}, ctx.Err()
			}
			return tool.Result{Output: err.Error(), IsError: true}, nil
		}
		res, err, lost := s.callOn(ctx, c, name, args)
		if lost == nil {
			return res, err
		}
		down := s.lost(c, lost)
		if !repeatable || attempt > 0 {
			return tool.Result{Output: down.Error(), IsError: true}, nil
		}
	}
}

// callOn sends one call on c. lost is set, instead of a result, when the
// connection failed during the call (the server may or may not have run
// it).
func (s *Server) callOn(ctx context.Context, c *conn, name string, args json.RawMessage) (res tool.Result, err, lost error) {
	cctx, stop := s.bind(ctx)
	defer stop()
	r, err := c.sess.CallTool(cctx, &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		if ctx.Err() != nil {
			return tool.Result{}, fmt.Errorf("MCP server %q: tool %q: %w", s.cfg.Name, name, ctx.Err()), nil
		}
		if cause := context.Cause(cctx); cause != nil && errors.Is(cause, ErrClosed) {
			return tool.Result{Output: fmt.Sprintf("MCP server %q was shut down while tool %q ran; its effects may be partial", s.cfg.Name, name), IsError: true}, nil, nil
		}
		var login *LoginRequiredError
		if errors.As(err, &login) {
			// The server is up but refuses this process's tokens: a new
			// connection would be refused too.
			return tool.Result{Output: login.Error(), IsError: true}, nil, nil
		}
		var rpc *jsonrpc.Error
		if errors.As(err, &rpc) && !localCodes[rpc.Code] {
			// The server answered: it refused the call (unknown tool,
			// invalid arguments, internal error). It is still running.
			return tool.Result{Output: fmt.Sprintf("MCP server %q refused the call to %q: %s", s.cfg.Name, name, rpc.Message), IsError: true}, nil, nil
		}
		return tool.Result{}, nil, err
	}
	return formatResult(r, s.cfg.MaxOutputBytes, s.cfg.MaxImageBytes), nil, nil
}

// localCodes are the JSON-RPC error codes the SDK uses for failures on
// this side of the connection (closing, rejected by the transport): the
// server never saw the call.
var localCodes = map[int64]bool{-32003: true, -32004: true, -32005: true}

func (s *Server) buildTools(remote []*sdk.Tool) ([]tool.Tool, []string) {
	var warn []string
	want := map[string]bool{}
	for _, n := range s.cfg.Tools {
		want[n] = false
	}
	prefix := ""
	if !s.cfg.NoPrefix {
		prefix = s.cfg.Prefix
		if prefix == "" {
			prefix = s.cfg.Name + "__"
		}
	}
	used := map[string]bool{}
	var out []tool.Tool
	for _, rt := range remote {
		if len(want) > 0 {
			if _, ok := want[rt.Name]; !ok {
				continue
			}
			want[rt.Name] = true
		}
		name := uniqueName(SanitizeName(prefix+rt.Name), used)
		used[name] = true
		if name != prefix+rt.Name {
			warn = append(warn, fmt.Sprintf("MCP server %q: tool %q is offered as %q (names may use only letters, digits, _ and -, at most %d)", s.cfg.Name, rt.Name, name, MaxNameLength))
		}
		schema, note := FixSchema(rt.InputSchema)
		if note != "" {
			warn = append(warn, fmt.Sprintf("MCP server %q: tool %q: %s", s.cfg.Name, rt.Name, note))
		}
		t := &Tool{srv: s, remote: rt.Name, effect: tool.EffectExecute}
		t.spec = model.ToolSpec{Name: name, Description: describe(rt, s.cfg.Name), Parameters: schema}
		if a := rt.Annotations; a != nil {
			if a.ReadOnlyHint {
				t.effect = tool.EffectRead
			}
			t.idempotent = a.ReadOnlyHint || a.IdempotentHint
		}
		if s.cfg.Effect != "" {
			t.effect = s.cfg.Effect
		}
		if e, ok := s.cfg.ToolEffects[rt.Name]; ok {
			t.effect = e
		}
		out = append(out, t)
	}
	for _, n := range s.cfg.Tools {
		if !want[n] {
			warn = append(warn, fmt.Sprintf("MCP server %q has no tool %q", s.cfg.Name, n))
		}
	}
	return out, warn
}

func describe(t *sdk.Tool, server string) string {
	d := strings.TrimSpace(t.Description)
	title := t.Title
	if title == "" && t.Annotations != nil {
		title = t.Annotations.Title
	}
	if d == "" {
		d = title
	}
	if d == "" {
		d = fmt.Sprintf("Tool %q of the MCP server %q.", t.Name, server)
	}
	return d
}

// SanitizeName makes name fit [A-Za-z0-9_-]{1,64}: other characters become
// "_", and a longer name is cut and ends with a hash of the whole, so
// distinct long names stay distinct.
func SanitizeName(name string) string {
	var b strings.Builder
	for _, r := range name {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	s := b.String()
	if s == "" {
		return "tool"
	}
	if len(s) > MaxNameLength {
		sum := sha256.Sum256([]byte(name))
		h := hex.EncodeToString(sum[:4])
		s = s[:MaxNameLength-len(h)-1] + "_" + h
	}
	return s
}

func uniqueName(name string, used map[string]bool) string {
	if !used[name] {
		return name
	}
	for i := 2; ; i++ {
		suffix := fmt.Sprintf("_%d", i)
		base := name
		if len(base)+len(suffix) > MaxNameLength {
			base = base[:MaxNameLength-len(suffix)]
		}
		if c := base + suffix; !used[c] {
			return c
		}
	}
}
