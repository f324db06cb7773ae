package anthropic

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/agentloop/agentloop/model/internal/transport"
)

func statusHint(status int, msg, name string) string {
	switch {
	case status == http.StatusNotFound && strings.Contains(msg, "model"):
		return fmt.Sprintf("check the model name %q (e.g. claude-sonnet-4-5)", name)
	case status == http.StatusRequestEntityTooLarge:
		return "the conversation is too large for one request"
	case status == http.StatusBadRequest && strings.Contains(msg, "credit balance"):
		return "add credits in the Anthropic console"
	}
	return ""
}

// streamError is an error event in a stream, or an error object on a 200.
// Overload, rate-limit and internal errors are transient.
func streamError(r *transport.Reply, e *apiError) error {
	if e == nil {
		e = &apiError{Message: "error event without details"}
	}
	msg := e.Message
	if e.Type != "" {
		msg += " (" + e.Type + ")"
	}
	err := fmt.Errorf("anthropic: error event in the reply from %s (model %s): %s", r.URL, r.Model, msg)
	switch e.Type {
	case "overloaded_error", "api_error", "rate_limit_error", "timeout_error":
		return transport.Transient(err)
	}
	return err
}
