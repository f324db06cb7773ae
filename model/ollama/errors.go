package ollama

import (
	"fmt"
	"net/http"
	"strings"
)

func unreachableHint(name string) string {
	return fmt.Sprintf("start Ollama with `ollama serve` and fetch the model with `ollama pull %s`, or pick another model with --model", name)
}

func statusHint(status int, msg, name string) string {
	lower := strings.ToLower(msg)
	switch {
	// Ollama says: model "x" not found, try pulling it first. Any other 404
	// ("404 page not found", {"detail":"Not Found"}) is another server.
	case status == http.StatusNotFound && strings.Contains(lower, "model") && strings.Contains(lower, "not found"):
		return fmt.Sprintf("fetch it with `ollama pull %s`, or pick another model with --model", name)
	case status == http.StatusBadRequest && strings.Contains(lower, "does not support tools"):
		return "pick a model that supports tool calling (e.g. qwen3:8b) with --model"
	case status == http.StatusNotFound:
		return "is --base-url an Ollama server (it should answer /api/chat)?"
	}
	return ""
}
