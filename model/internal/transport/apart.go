package transport

import (
	"github.com/agentloop/agentloop/internal/ownstack"
	"github.com/agentloop/agentloop/model"
)

// Apart runs read — a reply's reading and decoding — on a goroutine of its
// own and waits for it (see package ownstack): a reply is read at the
// deepest point of a session's stack, and decoding it with encoding/json
// recurses about a KiB per level of its nesting. The OpenAI client's
// whole-reply reader, which recurses in small frames, does without it.
// A panic in read is raised again on the caller's goroutine.
func Apart(read func() (*model.Response, error)) (*model.Response, error) {
	return ownstack.Run(read)
}
