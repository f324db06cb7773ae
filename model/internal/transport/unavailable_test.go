package transport

import (
	"errors"
	"testing"

	"github.com/agentloop/agentloop/model"
)

// 404 and a refusal of the conversation as too long mark the model
// unavailable (a session moves to a fallback model); other statuses do not.
func TestStatusErrorUnavailable(t *testing.T) {
	for _, c := range []struct {
		code int
		msg  string
		want bool
	}{
		{404, "model gone", true},
		{400, "This model's maximum context length is 8192 tokens", true},
		{400, "prompt is too long: 210000 tokens > 200000 maximum", true},
		{400, "invalid tool schema", false},
		{401, "bad key", false},
		{503, "overloaded", false},
	} {
		err := error(&StatusError{StatusCode: c.code, Message: c.msg})
		if got := errors.Is(err, model.ErrModelUnavailable); got != c.want {
			t.Errorf("%d %q: unavailable %v, want %v", c.code, c.msg, got, c.want)
		}
	}
}
