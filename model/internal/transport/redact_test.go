package transport

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/model"
)

// A provider that quotes the key it was sent — in a 401, or in a body it
// cannot be read from — never gets that key into an error.
func TestErrorsNeverCarryTheKey(t *testing.T) {
	const key = "sk-live-0123456789abcdef"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sent := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		if r.URL.Query().Get("bad") == "body" {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"oops": "%s`, sent) // 200, cut short
			return
		}
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprintf(w, `{"error":{"message":"Incorrect API key provided: %s"}}`, sent)
	}))
	defer srv.Close()
	for _, path := range []string{"/v1/chat", "/v1/chat?bad=body"} {
		c := New(Config{Provider: "openai", URL: srv.URL + path, Header: http.Header{"Authorization": {"Bearer " + key}}, Retry: Retry{MaxAttempts: 1}})
		_, err := c.Do(context.Background(), "m", bytesBody([]byte(`{}`)), nil, func(r *Reply) (*model.Response, error) {
			return nil, r.Malformed("unreadable: %s", readAll(r))
		})
		if err == nil {
			t.Fatalf("%s: no error", path)
		}
		if strings.Contains(err.Error(), key) || !strings.Contains(err.Error(), "[redacted]") {
			t.Fatalf("%s: %v", path, err)
		}
		var se *StatusError
		if path == "/v1/chat" && (!errors.As(err, &se) || se.StatusCode != 401 || strings.Contains(se.Error(), key)) {
			t.Fatalf("the status error is not there, or carries the key: %v", se)
		}
	}
}

func readAll(r *Reply) string {
	b := new(strings.Builder)
	buf := make([]byte, 512)
	for {
		n, err := r.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			return b.String()
		}
	}
}
