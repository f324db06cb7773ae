package service

import (
	"context"
	"errors"
	"regexp"

	"github.com/agentloop/agentloop/store"
)

// ScopeAdmin lets a caller edit the tenant's prompts and keys.
const ScopeAdmin Scope = "admin"

var promptName = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)

// PutPrompt stores a new version of one of the caller's tenant's prompts.
func (s *Service) PutPrompt(ctx context.Context, c Caller, name, text string) (store.Prompt, error) {
	if err := c.need(ScopeAdmin); err != nil {
		return store.Prompt{}, err
	}
	if !promptName.MatchString(name) {
		return store.Prompt{}, invalid("prompt name %q: 1-64 letters, digits, '.', '-' or '_'", name)
	}
	if text == "" {
		return store.Prompt{}, invalid("the prompt's text is empty")
	}
	return s.st.PutPrompt(ctx, store.Prompt{Tenant: c.Tenant, Name: name, Text: text, Author: c.Subject})
}

// Prompt returns a version of a prompt (0: the latest).
func (s *Service) Prompt(ctx context.Context, c Caller, name string, version int) (store.Prompt, error) {
	if err := c.need(ScopeRead); err != nil {
		return store.Prompt{}, err
	}
	p, err := s.st.GetPrompt(ctx, c.Tenant, name, version)
	if errors.Is(err, store.ErrNotFound) {
		if version == 0 {
			return p, notFound("no prompt named %q (PUT /v1/prompts/%s creates it)", name, name)
		}
		return p, notFound("prompt %q has no version %d", name, version)
	}
	return p, err
}

// Prompts lists the latest version of each of the tenant's prompts.
func (s *Service) Prompts(ctx context.Context, c Caller) ([]store.Prompt, error) {
	if err := c.need(ScopeRead); err != nil {
		return nil, err
	}
	return s.st.ListPrompts(ctx, c.Tenant)
}
