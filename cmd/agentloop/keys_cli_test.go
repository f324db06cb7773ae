package main

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// Keys made, listed and revoked from the command line guard a server
// started with --auth keys.
func TestKeysFromTheCommandLine(t *testing.T) {
	c := newCLI(t)
	if _, stderr, code := c.run("", "keys", "create", "--db", c.db, "--tenant", "acme", "--role", "bogus"); code != exitUsage || !strings.Contains(stderr, "use admin, operator or viewer") {
		t.Fatalf("bad role: %d %s", code, stderr)
	}
	secret, stderr, code := c.run("", "keys", "create", "--db", c.db, "--tenant", "acme", "--role", "viewer", "--name", "wallboard")
	secret = strings.TrimSpace(secret)
	if code != 0 || !strings.HasPrefix(secret, "al_") {
		t.Fatalf("create: %d %q %s", code, secret, stderr)
	}
	list, _, code := c.run("", "keys", "list", "--db", c.db)
	if code != 0 || !strings.Contains(list, "acme") || !strings.Contains(list, "wallboard") || strings.Contains(list, secret) {
		t.Fatalf("list: %d %q", code, list)
	}
	id := strings.Fields(strings.Split(list, "\n")[1])[0]

	s := c.serve("--auth", "keys")
	get := func(key string) int {
		req, _ := http.NewRequest("GET", s.url+"/v1/sessions", nil)
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := get(""); code != 401 {
		t.Fatalf("no key: %d", code)
	}
	if code := get(secret); code != 200 {
		t.Fatalf("the new key: %d", code)
	}
	if _, stderr, code := c.run("", "keys", "revoke", "--db", c.db, "key_nope"); code == 0 || !strings.Contains(stderr, "no key key_nope") {
		t.Fatalf("revoking an unknown key: %d %s", code, stderr)
	}
	if _, stderr, code := c.run("", "keys", "revoke", "--db", c.db, id); code != 0 {
		t.Fatalf("revoke: %d %s", code, stderr)
	}
	// The running server reads keys from the store: revoked means refused.
	if code := get(secret); code != 401 {
		t.Fatalf("the revoked key: %d", code)
	}
	if _, stderr, _ := c.run("", "keys", "list", "--db", c.db); !strings.Contains(stderr, "no keys") {
		t.Fatalf("list after revoking: %s", stderr)
	}
}

// Each key has its own rate: a key over it gets 429 with Retry-After and
// a message saying what to do, another key goes on unaffected.
func TestRateLimitPerKey(t *testing.T) {
	c := newCLI(t)
	var keys []string
	for range 2 {
		k, stderr, code := c.run("", "keys", "create", "--db", c.db, "--tenant", "acme", "--role", "viewer")
		if code != 0 {
			t.Fatalf("create: %d %s", code, stderr)
		}
		keys = append(keys, strings.TrimSpace(k))
	}
	s := c.serve("--auth", "keys", "--rate-limit", "0.5", "--rate-burst", "3")
	get := func(key string) (int, string, string) {
		req, _ := http.NewRequest("GET", s.url+"/v1/sessions", nil)
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("Retry-After"), string(b)
	}
	for i := range 3 {
		if code, _, body := get(keys[0]); code != 200 {
			t.Fatalf("request %d within the burst: %d %s", i+1, code, body)
		}
	}
	code, retry, body := get(keys[0])
	if code != 429 || retry == "" || retry == "0" || !strings.Contains(body, "requests a second") || !strings.Contains(body, "--rate-limit") {
		t.Fatalf("over the rate: %d Retry-After %q %s", code, retry, body)
	}
	if code, _, body := get(keys[1]); code != 200 {
		t.Fatalf("another key was limited too: %d %s", code, body)
	}
}
