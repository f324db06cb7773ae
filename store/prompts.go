package store

import (
	"context"
	"time"
)

// Prompt is one version of a named system prompt of a tenant.
type Prompt struct {
	Tenant    string    `json:"tenant,omitempty"`
	Name      string    `json:"name"`
	Version   int       `json:"version"`
	Text      string    `json:"text"`
	CreatedAt time.Time `json:"created_at"`
	Author    string    `json:"author,omitempty"`
}

// Prompts stores versioned prompts: every change is a new version, and
// old versions stay readable (a session records the version it ran with).
type Prompts interface {
	// PutPrompt stores p.Text as the next version of p.Name for p.Tenant
	// and returns it with its version and time.
	PutPrompt(ctx context.Context, p Prompt) (Prompt, error)
	// GetPrompt returns a version (0: the latest), or ErrNotFound.
	GetPrompt(ctx context.Context, tenant, name string, version int) (Prompt, error)
	// ListPrompts returns the latest version of each of a tenant's prompts, by name.
	ListPrompts(ctx context.Context, tenant string) ([]Prompt, error)
}
