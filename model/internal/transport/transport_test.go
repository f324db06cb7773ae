package transport

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestSSEReader(t *testing.T) {
	long := strings.Repeat("x", 200<<10)
	tests := []struct {
		name, in string
		want     []string // "event|data"
	}{
		{"basic", "data: a\n\ndata: b\n\n", []string{"|a", "|b"}},
		{"comments and CRLF", ": keep-alive\r\n\r\nevent: ping\r\ndata: {}\r\n\r\n", []string{"ping|{}"}},
		{"multi-line data", "data: a\ndata: b\n\n", []string{"|a\nb"}},
		{"no space after colon", "data:{\"x\":1}\n\n", []string{"|{\"x\":1}"}},
		{"last event without blank line", "data: a\n\ndata: [DONE]", []string{"|a", "|[DONE]"}},
		{"id and retry ignored", "id: 7\nretry: 10\ndata: a\n\n", []string{"|a"}},
		{"line longer than the buffer", "data: " + long + "\n\n", []string{"|" + long}},
		{"event name kept per event", "event: a\ndata: 1\n\ndata: 2\n\n", []string{"a|1", "|2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := NewSSEReader(strings.NewReader(tt.in))
			var got []string
			for {
				ev, data, err := r.Next()
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, string(ev)+"|"+string(data))
			}
			if strings.Join(got, "\x00") != strings.Join(tt.want, "\x00") {
				t.Errorf("got %q, want %q", trunc(got), trunc(tt.want))
			}
		})
	}
}

func trunc(s []string) []string {
	out := make([]string, len(s))
	for i, v := range s {
		out[i] = Excerpt([]byte(v), 40)
	}
	return out
}

func TestAPIErrorText(t *testing.T) {
	tests := map[string]string{
		`{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}`: "Incorrect API key provided (invalid_api_key)",
		`{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`:                     "invalid x-api-key (authentication_error)",
		`{"error":"model \"x\" not found, try pulling it first"}`:                                                    `model "x" not found, try pulling it first`,
		`{"object":"error","message":"The model does not exist.","type":"NotFoundError","code":404}`:                 "The model does not exist. (NotFoundError)",
		`{"detail":"Not Found"}`: "Not Found",
		`[{"error":{"code":400,"message":"API key not valid. Please pass a valid API key.","status":"INVALID_ARGUMENT"}}]`: "API key not valid. Please pass a valid API key.",
	}
	for body, want := range tests {
		got, ok := APIErrorText([]byte(body))
		if !ok || got != want {
			t.Errorf("%s: %q, %v; want %q", body, got, ok, want)
		}
	}
	for _, body := range []string{"<html>", "", "{}", `{"foo":1}`, "Internal Server Error"} {
		if got, ok := APIErrorText([]byte(body)); ok {
			t.Errorf("%q recognised as %q", body, got)
		}
	}
}

func TestDescribeBody(t *testing.T) {
	tests := []struct{ mt, body, want string }{
		{"text/html", "<html><head><title> 502  Bad Gateway</title></head></html>", `the body is an HTML page titled "502 Bad Gateway", not JSON`},
		{"text/plain", "", "empty response body"},
		{"text/plain", "upstream connect error or disconnect/reset before headers", `the body is not a JSON error (content type "text/plain"): "upstream connect error or disconnect/reset before headers"`},
		{"", "<p>oops</p>", `the body is HTML, not JSON: "<p>oops</p>"`},
		// Not UTF-8 (a Latin-1 page): bytes.ToLower would shift the offsets.
		{"text/html", "<\xbd<title>", `the body is HTML, not JSON: "<\xbd<title>"`},
		{"text/html", "<p>caf\xe9</p><TITLE>Caf\xe9 \xc9T\xc9</Title>", "the body is an HTML page titled \"Caf\\xe9 \\xc9T\\xc9\", not JSON"},
	}
	for _, tt := range tests {
		if got := DescribeBody(tt.mt, []byte(tt.body)); got != tt.want {
			t.Errorf("%q: %s, want %s", tt.body, got, tt.want)
		}
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		h    map[string]string
		want time.Duration
	}{
		{map[string]string{"Retry-After": "3"}, 3 * time.Second},
		{map[string]string{"Retry-After": "1.5"}, 1500 * time.Millisecond},
		{map[string]string{"Retry-After": "Thu, 02 Jan 2025 03:05:05 GMT"}, time.Minute},
		{map[string]string{"Retry-After": "Thu, 02 Jan 2025 03:00:00 GMT"}, 0},
		{map[string]string{"Retry-After": "soon"}, 0},
		{map[string]string{"Retry-After-Ms": "250", "Retry-After": "1"}, 250 * time.Millisecond},
		{nil, 0},
	}
	for _, tt := range tests {
		h := http.Header{}
		for k, v := range tt.h {
			h.Set(k, v)
		}
		if got := parseRetryAfter(h, now); got != tt.want {
			t.Errorf("%v: %v, want %v", tt.h, got, tt.want)
		}
	}
}

func TestBackoff(t *testing.T) {
	r := Retry{Rand: func() float64 { return 0.999999 }}.withDefaults()
	var got []time.Duration
	for n := 1; n <= 9; n++ {
		got = append(got, r.backoff(n, 0).Round(time.Millisecond))
	}
	want := []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, 30 * time.Second, 30 * time.Second, 30 * time.Second}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("backoff caps %v, want %v", got, want)
		}
	}
	if d := r.backoff(1, 7*time.Second); d != 7*time.Second {
		t.Errorf("Retry-After not honoured: %v", d)
	}
	zero := Retry{Rand: func() float64 { return 0 }}.withDefaults()
	if d := zero.backoff(3, 0); d != 0 {
		t.Errorf("full jitter must reach 0, got %v", d)
	}
}

func TestArguments(t *testing.T) {
	tests := map[string]string{
		"":                   "{}",
		"  ":                 "{}",
		`{"a":1}`:            `{"a":1}`,
		`{"path": "main.go"`: `"{\"path\": \"main.go\""`,
		"not json at all":    `"not json at all"`,
	}
	for in, want := range tests {
		if got := string(Arguments([]byte(in))); got != want {
			t.Errorf("Arguments(%q) = %s, want %s", in, got, want)
		}
	}
}
