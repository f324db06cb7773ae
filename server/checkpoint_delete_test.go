package server_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
)

// checkpointRepos lists the sessions whose shadow repositories a's
// server keeps.
func checkpointRepos(a *api) []string {
	dirs, _ := filepath.Glob(filepath.Join(a.dir, "checkpoints", "*.git"))
	var ids []string
	for _, d := range dirs {
		ids = append(ids, strings.TrimSuffix(filepath.Base(d), ".git"))
	}
	sort.Strings(ids)
	return ids
}

// DELETE /v1/sessions/{id} of a session with a fork keeps its checkpoints
// for the fork, which still forks and compares; pruning the fork then
// removes both. A fork with a bad model is refused with the model named
// once.
func TestDeleteOverHTTPRemovesCheckpointsNoForkReads(t *testing.T) {
	a := newRewindAPI(t, true)
	s := writesScript(t, a.dir, [2]string{"a.txt", "one"}, [2]string{"b.txt", "two"})
	id := a.create("", fmt.Sprintf(`{"task":"write","model":"script:%s","workspace":%q}`, s, filepath.Join(a.dir, "ws", "orig")))
	a.waitStatus("", id, "completed")

	code, out, hdr := a.do("POST", "/v1/sessions/"+id+"/fork", "", `{"at":1,"model":"qwen3:8b"}`)
	var p struct{ Detail string }
	json.Unmarshal([]byte(out), &p)
	if code != 400 || hdr.Get("Content-Type") != "application/problem+json" ||
		!strings.HasPrefix(p.Detail, `model "qwen3:8b": write it as PROVIDER/NAME`) {
		t.Fatalf("fork with a bad model: %d %s", code, out)
	}
	code, out, _ = a.do("POST", "/v1/sessions", "", `{"task":"x","model":"qwen3:8b"}`)
	if json.Unmarshal([]byte(out), &p); code != 400 || !strings.HasPrefix(p.Detail, `model "qwen3:8b": write it as PROVIDER/NAME`) {
		t.Fatalf("start with a bad model: %d %s", code, out)
	}

	fork := func(from string) string {
		t.Helper()
		code, out, _ := a.do("POST", "/v1/sessions/"+from+"/fork", "", `{"at":1}`)
		var created struct{ ID string }
		if json.Unmarshal([]byte(out), &created); code != 201 || created.ID == "" {
			t.Fatalf("fork of %s: %d %s", from, code, out)
		}
		a.waitStatus("", created.ID, "completed")
		return created.ID
	}
	f := fork(id)
	both := []string{id, f}
	sort.Strings(both)
	if code, out, _ := a.do("DELETE", "/v1/sessions/"+id, "", ""); code != 204 {
		t.Fatalf("delete the original: %d %s", code, out)
	}
	if got := checkpointRepos(a); !slices.Equal(got, both) {
		t.Fatalf("after deleting the original: checkpoints of %v, want %v (the fork reads them)", got, both)
	}
	g := fork(f)
	if code, out, _ := a.do("GET", "/v1/sessions/compare?a="+f+"&b="+g, "", ""); code != 200 {
		t.Fatalf("compare the fork with its own fork: %d %s", code, out)
	}
	var st struct{ Workspace string }
	_, out, _ = a.do("GET", "/v1/sessions/"+g, "", "")
	json.Unmarshal([]byte(out), &st)
	if b, err := os.ReadFile(filepath.Join(st.Workspace, "a.txt")); err != nil || string(b) != "one" {
		t.Fatalf("the fork of the fork: a.txt %q %v", b, err)
	}

	future := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	code, out, _ = a.do("DELETE", "/v1/sessions?ended_before="+future, "", "")
	if code != 200 || !strings.Contains(out, f) || !strings.Contains(out, g) {
		t.Fatalf("prune: %d %s", code, out)
	}
	if got := checkpointRepos(a); len(got) != 0 {
		t.Fatalf("after pruning every session: checkpoints of %v", got)
	}
}
