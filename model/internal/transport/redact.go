package transport

import (
	"net/http"
	"net/url"
	"strings"
)

// secretsOf lists the credentials a client sends: the values of its
// authentication headers (without their scheme) and of key-like URL query
// parameters. Values shorter than 8 bytes are left out: too short to be a
// key, and replacing them would garble messages.
func secretsOf(h http.Header, rawURL string) []string {
	var out []string
	add := func(v string) {
		if v = strings.TrimSpace(v); len(v) >= 8 {
			out = append(out, v)
		}
	}
	for name, values := range h {
		n := strings.ToLower(name)
		if !strings.Contains(n, "auth") && !strings.Contains(n, "key") && !strings.Contains(n, "token") && !strings.Contains(n, "secret") {
			continue
		}
		for _, v := range values {
			add(v)
			if _, cred, ok := strings.Cut(v, " "); ok { // "Bearer KEY", "Basic …"
				add(cred)
			}
		}
	}
	if u, err := url.Parse(rawURL); err == nil {
		for name, values := range u.Query() {
			n := strings.ToLower(name)
			if strings.Contains(n, "key") || strings.Contains(n, "token") || strings.Contains(n, "secret") {
				for _, v := range values {
					add(v)
				}
			}
		}
		if p, ok := u.User.Password(); ok {
			add(p)
		}
	}
	return out
}

// redactText replaces every secret in s.
func redactText(s string, secrets []string) string {
	for _, k := range secrets {
		if strings.Contains(s, k) {
			s = strings.ReplaceAll(s, k, "[redacted]")
		}
	}
	return s
}

// redactedError is an error whose text had a credential in it: it reads
// without it, and still unwraps to the original for errors.Is and As.
type redactedError struct {
	err error
	msg string
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

func redact(err error, secrets []string) error {
	msg := err.Error()
	if clean := redactText(msg, secrets); clean != msg {
		return &redactedError{err: err, msg: clean}
	}
	return err
}
