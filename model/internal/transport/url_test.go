package transport

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/model"
)

// Every call goes to the endpoint as configured — path, query, the
// credentials of a base URL as basic auth, its host — call after call.
func TestRequestsGoToTheConfiguredURL(t *testing.T) {
	type seen struct{ path, query, auth, host string }
	var got []seen
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		got = append(got, seen{r.URL.Path, r.URL.RawQuery, r.Header.Get("Authorization"), r.Host})
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{}`)
	}))
	defer srv.Close()
	base := strings.Replace(srv.URL, "http://", "http://user:secret@", 1)
	c := New(Config{Provider: "openai", URL: base + "/v1/chat/completions?api-version=2", Retry: Retry{MaxAttempts: 1}})
	for range 2 {
		_, err := c.Do(context.Background(), "m", newBody([]byte(`{}`), nil), nil, func(r *Reply) (*model.Response, error) {
			return &model.Response{}, nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	host := strings.TrimPrefix(srv.URL, "http://")
	want := seen{"/v1/chat/completions", "api-version=2", "Basic dXNlcjpzZWNyZXQ=", host}
	if len(got) != 2 || got[0] != want || got[1] != want {
		t.Fatalf("requests reached %+v, want twice %+v", got, want)
	}
	if strings.Contains(c.shownURL, "secret") {
		t.Fatalf("the URL shown in errors keeps the password: %s", c.shownURL)
	}
}

// A URL that does not parse fails each call with the reason.
func TestABadURLFailsTheCall(t *testing.T) {
	c := New(Config{Provider: "openai", URL: "http://[::1", Retry: Retry{MaxAttempts: 1}})
	_, err := c.Do(context.Background(), "m", newBody([]byte(`{}`), nil), nil, func(r *Reply) (*model.Response, error) {
		return &model.Response{}, nil
	})
	if err == nil || !strings.Contains(err.Error(), "building request") {
		t.Fatalf("a call to a URL that does not parse: %v", err)
	}
}
