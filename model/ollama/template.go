package ollama

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"text/template/parse"
	"time"

	"github.com/agentloop/agentloop/model"
	"github.com/agentloop/agentloop/model/internal/transport"
	"github.com/agentloop/agentloop/toolcall"
)

// CallPrefix returns the marker a model's chat template writes before its
// tool calls, found the way Ollama's tools parser finds it
// (tools/template.go parseTag): the first non-blank text inside the
// template's {{if .ToolCalls}} block, cut at its first '{' and trimmed;
// "{" when there is none (JSON calls with no marker), "" when the template
// does not parse or has no such block.
func CallPrefix(tmpl string) string {
	trees, err := parse.Parse("t", tmpl, "{{", "}}", map[string]any{})
	if err != nil {
		return ""
	}
	t := trees["t"]
	if t == nil || t.Root == nil {
		return ""
	}
	tc := findToolCallsIf(t.Root.Nodes, 0)
	if tc == nil {
		return ""
	}
	tag := "{"
	if tn := firstText(tc.List.Nodes, 0); tn != nil {
		s := strings.ReplaceAll(string(tn.Text), "\r\n", "\n")
		s, _, _ = strings.Cut(s, "{")
		if s = strings.TrimSpace(s); s != "" {
			tag = s
		}
	}
	return tag
}

const maxTemplateDepth = 64

// findToolCallsIf finds the {{if}} whose pipeline names .ToolCalls.
func findToolCallsIf(nodes []parse.Node, depth int) *parse.IfNode {
	if depth > maxTemplateDepth {
		return nil
	}
	for _, node := range nodes {
		var lists []*parse.ListNode
		switch n := node.(type) {
		case *parse.IfNode:
			for _, cmd := range n.Pipe.Cmds {
				for _, arg := range cmd.Args {
					if f, ok := arg.(*parse.FieldNode); ok && slices.Contains(f.Ident, "ToolCalls") {
						return n
					}
				}
			}
			lists = []*parse.ListNode{n.List, n.ElseList}
		case *parse.ListNode:
			lists = []*parse.ListNode{n}
		case *parse.RangeNode:
			lists = []*parse.ListNode{n.List, n.ElseList}
		case *parse.WithNode:
			lists = []*parse.ListNode{n.List, n.ElseList}
		}
		for _, l := range lists {
			if l == nil {
				continue
			}
			if r := findToolCallsIf(l.Nodes, depth+1); r != nil {
				return r
			}
		}
	}
	return nil
}

// firstText is the first non-blank text node, depth first, stopping at an
// action (what follows it comes after the call's own fields).
func firstText(nodes []parse.Node, depth int) *parse.TextNode {
	if depth > maxTemplateDepth {
		return nil
	}
	for _, node := range nodes {
		switch n := node.(type) {
		case *parse.TextNode:
			if len(bytes.TrimSpace(n.Text)) > 0 {
				return n
			}
		case *parse.ActionNode:
			return nil
		case *parse.ListNode:
			if t := firstText(n.Nodes, depth+1); t != nil {
				return t
			}
		case *parse.IfNode, *parse.RangeNode, *parse.WithNode:
			var b *parse.BranchNode
			switch x := n.(type) {
			case *parse.IfNode:
				b = &x.BranchNode
			case *parse.RangeNode:
				b = &x.BranchNode
			case *parse.WithNode:
				b = &x.BranchNode
			}
			for _, l := range []*parse.ListNode{b.List, b.ElseList} {
				if l == nil {
					continue
				}
				if t := firstText(l.Nodes, depth+1); t != nil {
					return t
				}
			}
			return nil
		}
	}
	return nil
}

// callPrefix returns the model's template prefix, asking /api/show once
// per model; a failed lookup is not retried (recovery then runs without
// the rule) and costs the reply nothing but the wait, bounded below.
func (c *Client) callPrefix(ctx context.Context, name string) string {
	if v, ok := c.prefixes.Load(name); ok {
		return v.(string)
	}
	prefix := c.showTemplatePrefix(ctx, name)
	c.prefixes.Store(name, prefix)
	return prefix
}

func (c *Client) showTemplatePrefix(ctx context.Context, name string) string {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	body, _ := json.Marshal(map[string]string{"model": name})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, transport.Endpoint(c.cfg.BaseURL, "/api/show"), bytes.NewReader(body))
	if err != nil {
		return ""
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range c.header {
		req.Header[k] = v
	}
	hc := c.cfg.HTTPClient
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return ""
	}
	var show struct {
		Template string `json:"template"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 4<<20)).Decode(&show); err != nil {
		return ""
	}
	return CallPrefix(show.Template)
}

// recoverCalls reads tool calls Ollama's own parser left in the text, with the
// prefix rule of the model's template (toolcall.Options.CallPrefix): a
// model that wrote a call its server did not take still gets it run.
func (c *Client) recoverCalls(ctx context.Context, name string, req *model.Request, resp *model.Response) {
	if len(req.Tools) == 0 || len(resp.ToolCalls) > 0 || strings.TrimSpace(resp.Text) == "" || resp.FinishReason == model.FinishLength {
		return
	}
	// The template is asked for only when the text holds a call: the
	// prefix then decides whether it is one.
	if r := toolcall.Parse(resp.Text, toolcall.Options{Tools: req.Tools}); len(r.Calls) == 0 {
		return
	}
	r := toolcall.Parse(resp.Text, toolcall.Options{Tools: req.Tools, CallPrefix: c.callPrefix(ctx, name)})
	if len(r.Calls) == 0 {
		resp.TextRead = true // the template's prefix says it is text, not a call
		return
	}
	for i := range r.Calls {
		r.Calls[i].ID = c.cfg.NewID()
	}
	resp.ToolCalls, resp.Text, resp.FinishReason = r.Calls, r.Content, model.FinishToolCalls
}
