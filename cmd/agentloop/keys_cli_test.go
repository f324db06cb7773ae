package main

import (
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
