package mcp

import (
	"encoding/json"
	"fmt"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentloop/agentloop/model"
	"github.com/agentloop/agentloop/tool"
)

// formatResult turns an MCP result into text for the model: text content
// joined by newlines, other content summarised in brackets, structured
// content as JSON when there is nothing else. Images of at most maxImage
// bytes are also passed on as images (their bracketed summary stays in
// the text for models that cannot see them); maxImage < 0 passes none.
func formatResult(res *sdk.CallToolResult, max, maxImage int) tool.Result {
	var parts []string
	var images []model.Image
	for _, c := range res.Content {
		if p := formatContent(c); p != "" {
			parts = append(parts, p)
		}
		if img, ok := c.(*sdk.ImageContent); ok && maxImage >= 0 && len(img.Data) > 0 && len(img.Data) <= maxImage && strings.HasPrefix(img.MIMEType, "image/") {
			images = append(images, model.Image{MIMEType: img.MIMEType, Data: img.Data})
		}
	}
	if len(parts) == 0 && res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			parts = append(parts, string(b))
		}
	}
	out := strings.Join(parts, "\n")
	if out == "" && res.IsError {
		out = "the tool reported an error without a message"
	}
	return tool.Result{Output: truncate(out, max), IsError: res.IsError, Images: images}
}

func formatContent(c sdk.Content) string {
	switch c := c.(type) {
	case *sdk.TextContent:
		return c.Text
	case *sdk.ImageContent:
		return fmt.Sprintf("[image: %s, %s]", orUnknown(c.MIMEType), byteSize(len(c.Data)))
	case *sdk.AudioContent:
		return fmt.Sprintf("[audio: %s, %s]", orUnknown(c.MIMEType), byteSize(len(c.Data)))
	case *sdk.ResourceLink:
		s := "[resource link: " + c.URI
		if c.Name != "" && c.Name != c.URI {
			s += " (" + c.Name + ")"
		}
		if c.MIMEType != "" {
			s += ", " + c.MIMEType
		}
		if c.Size != nil {
			s += ", " + byteSize(int(*c.Size))
		}
		return s + "]"
	case *sdk.EmbeddedResource:
		r := c.Resource
		if r == nil {
			return "[resource]"
		}
		if r.Blob != nil || r.Text == "" {
			return fmt.Sprintf("[resource: %s, %s, %s]", r.URI, orUnknown(r.MIMEType), byteSize(len(r.Blob)))
		}
		return fmt.Sprintf("[resource: %s]\n%s", r.URI, r.Text)
	case nil:
		return ""
	default:
		b, err := c.MarshalJSON()
		if err != nil {
			return fmt.Sprintf("[%T]", c)
		}
		var head struct {
			Type string `json:"type"`
		}
		_ = json.Unmarshal(b, &head)
		return fmt.Sprintf("[%s content, %s]", orUnknown(head.Type), byteSize(len(b)))
	}
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown type"
	}
	return s
}

// byteSize writes a byte count the way people read it: 512 B, 12 KB, 1.5 MB.
func byteSize(n int) string {
	switch {
	case n < 1<<10:
		return fmt.Sprintf("%d B", n)
	case n < 1<<20:
		return fmt.Sprintf("%d KB", (n+1<<9)>>10)
	default:
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	}
}

// truncate keeps the head and tail of s when it is longer than max bytes.
func truncate(s string, max int) string {
	if max <= 0 || len(s) <= max {
		return s
	}
	head := max * 3 / 4
	tail := max - head
	for head > 0 && !utf8Start(s[head]) {
		head--
	}
	start := len(s) - tail
	for start < len(s) && !utf8Start(s[start]) {
		start++
	}
	return s[:head] + fmt.Sprintf("\n[... %s cut from the middle of the result ...]\n", byteSize(start-head)) + s[start:]
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }
