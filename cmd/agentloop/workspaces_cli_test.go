package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Two tenants on one server: each names workspaces inside its own
// directory; another tenant's, the root, absolute paths outside and
// symlinks out are refused without showing the server's paths.
func TestWorkspacesBelongToTheirTenant(t *testing.T) {
	c := newCLI(t)
	root := t.TempDir()
	script := writeScript(t, `{"steps":[{"text":"done"}]}`)
	alpha, _ := c.key("alpha", "operator")
	beta, _ := c.key("beta", "operator")
	s := c.serve("--auth", "keys", "--model", "script:"+script, "--workspaces", root)
	create := func(key, body string) (int, string, string) {
		t.Helper()
		code, got, _ := s.send(t, request{"POST", "/v1/sessions", body, map[string]string{"Content-Type": "application/json", "Authorization": "Bearer " + key}})
		var created struct{ ID string }
		json.Unmarshal([]byte(got), &created)
		ws := ""
		if code == 201 {
			_, st, _ := s.send(t, request{"GET", "/v1/sessions/" + created.ID, "", map[string]string{"Authorization": "Bearer " + key}})
			var state struct{ Workspace string }
			json.Unmarshal([]byte(st), &state)
			ws = state.Workspace
		}
		return code, got, ws
	}
	code, body, betaWS := create(beta, `{"task":"x","workspace":"beta-proj"}`)
	if code != 201 || !strings.HasPrefix(betaWS, filepath.Join(root, "tenants", "beta")+"/") {
		t.Fatalf("beta's workspace: %d %s %q", code, body, betaWS)
	}
	os.WriteFile(filepath.Join(betaWS, "secret.txt"), []byte("beta's"), 0o600)
	// alpha naming the same name gets a directory of its own.
	code, body, alphaWS := create(alpha, `{"task":"x","workspace":"beta-proj"}`)
	if code != 201 || alphaWS == betaWS || !strings.HasPrefix(alphaWS, filepath.Join(root, "tenants", "alpha")+"/") {
		t.Fatalf("alpha naming beta's workspace: %d %s %q", code, body, alphaWS)
	}
	if _, err := os.Stat(filepath.Join(alphaWS, "secret.txt")); err == nil {
		t.Fatal("alpha's workspace holds beta's file")
	}
	os.Symlink(betaWS, filepath.Join(filepath.Dir(alphaWS), "to-beta"))
	os.Symlink("/etc", filepath.Join(filepath.Dir(alphaWS), "to-etc"))
	for _, ws := range []string{".", "..", "../beta/beta-proj", "../../", betaWS, root, "/etc", "to-beta", "to-etc/x", "beta-proj/../../beta"} {
		before := countDirs(t, root)
		code, body, _ := create(alpha, `{"task":"x","workspace":`+jsonString(ws)+`}`)
		if code != 403 {
			t.Errorf("alpha asking for %q: %d %s", ws, code, body)
		}
		if !filepath.IsAbs(ws) && strings.Contains(body, root) { // an absolute one is the caller's own words
			t.Errorf("the answer to %q shows the server's path: %s", ws, body)
		}
		if after := countDirs(t, root); after != before {
			t.Errorf("asking for %q made %d directories", ws, after-before)
		}
	}
	if _, err := os.Stat("/etc/x"); err == nil {
		t.Fatal("a directory was made through the symlink")
	}
}

func jsonString(s string) string { b, _ := json.Marshal(s); return string(b) }

// countDirs counts the directories under root (symlinks not followed).
func countDirs(t *testing.T, root string) int {
	t.Helper()
	n := 0
	filepath.WalkDir(root, func(_ string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			n++
		}
		return nil
	})
	return n
}

// Deleting a session removes the workspace the server made for it, and
// keeps one the tenant named (other sessions may use it).
func TestDeletedSessionsTakeTheirOwnWorkspace(t *testing.T) {
	c := newCLI(t)
	root := t.TempDir()
	script := writeScript(t, `{"steps":[{"text":"done"}]}`)
	s := c.serve("--model", "script:"+script, "--workspaces", root)
	start := func(body string) (id, ws string) {
		t.Helper()
		code, got, _ := s.send(t, request{"POST", "/v1/sessions", body, map[string]string{"Content-Type": "application/json"}})
		var created struct{ ID string }
		if json.Unmarshal([]byte(got), &created); code != 201 {
			t.Fatalf("create: %d %s", code, got)
		}
		s.waitFor(t, created.ID, "completed")
		_, st, _ := s.send(t, request{"GET", "/v1/sessions/" + created.ID, "", nil})
		var state struct{ Workspace string }
		json.Unmarshal([]byte(st), &state)
		return created.ID, state.Workspace
	}
	own, ownWS := start(`{"task":"x"}`)
	named, namedWS := start(`{"task":"x","workspace":"proj"}`)
	for _, id := range []string{own, named} {
		if code, got, _ := s.send(t, request{"DELETE", "/v1/sessions/" + id, "", nil}); code != 204 {
			t.Fatalf("delete %s: %d %s", id, code, got)
		}
	}
	if _, err := os.Stat(ownWS); !os.IsNotExist(err) {
		t.Errorf("the server's workspace of a deleted session is still there: %v", err)
	}
	if _, err := os.Stat(namedWS); err != nil {
		t.Errorf("a named workspace went with its session: %v", err)
	}
}
