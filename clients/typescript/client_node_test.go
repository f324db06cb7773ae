// Package typescript_test holds the Go side of the TypeScript client's
// tests: it builds the package with tsc, typechecks its example, checks
// the generated schema.ts against server/openapi.json, runs
// test/client.test.mjs against a real `agentloop serve` and
// test/stream.test.mjs against loopback servers of its own.
package typescript_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentloop/agentloop/internal/nodetest"
)

const project = "clients/typescript"

// The generated file is what `npm run generate` makes from the spec today:
// a spec changed without regenerating fails here.
func TestGeneratedSchemaMatchesSpec(t *testing.T) {
	dir := nodetest.Project(t, project)
	// The generator runs as package.json's generate script says, with its
	// output sent to a temporary file instead of src/schema.ts.
	b, err := os.ReadFile(filepath.Join(dir, "package.json"))
	if err != nil {
		t.Fatal(err)
	}
	var pkg struct {
		Scripts map[string]string `json:"scripts"`
	}
	if err := json.Unmarshal(b, &pkg); err != nil {
		t.Fatal(err)
	}
	args := strings.Fields(pkg.Scripts["generate"])
	if len(args) == 0 || args[0] != "openapi-typescript" || !slices.Contains(args, "src/schema.ts") {
		t.Fatalf("package.json's generate script %q: want openapi-typescript … src/schema.ts", pkg.Scripts["generate"])
	}
	fresh := filepath.Join(t.TempDir(), "schema.ts")
	args[0] = "node_modules/openapi-typescript/bin/cli.js"
	args[slices.Index(args, "src/schema.ts")] = fresh
	node(t, dir, args...)
	want, err := os.ReadFile(fresh)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(dir, "src", "schema.ts"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("clients/typescript/src/schema.ts is not what server/openapi.json generates: run `npm run generate` in clients/typescript and commit it\n%s",
			firstDifference(string(got), string(want)))
	}
}

// The client builds, and the README's example typechecks against the
// built package, type errors it must keep included (see its comments).
func TestClientTypechecks(t *testing.T) {
	dir := nodetest.Project(t, project)
	build(t, dir)
	node(t, dir, "node_modules/typescript/bin/tsc", "-p", "tsconfig.examples.json")
}

// Through the client, against the real binary (with --auth keys, so the
// client's key goes with every request): create and stream to the end,
// reply, approve (over a connection a proxy cuts), terminate, list with
// filters and pages, read problems; rewind a session that wrote files (a
// dry run, then for real), fork it, list its forks and compare them. The
// events the client streamed for each session (a rewound one's across
// both runs) are then held against the server's log, read here without
// the client.
func TestClientAgainstTheServer(t *testing.T) {
	dir := nodetest.Project(t, project)
	build(t, dir)
	s := serve(t)
	result := filepath.Join(t.TempDir(), "streamed.json")
	out := nodetest.Run(t, dir, "test/client.test.mjs", 2*time.Minute,
		"AGENTLOOP_URL="+s.url, "AGENTLOOP_KEY="+s.operator, "AGENTLOOP_VIEWER_KEY="+s.viewer,
		"AGENTLOOP_SCRIPTS="+t.TempDir(), "AGENTLOOP_RESULT="+result)
	allPassed(t, out, 9)

	b, err := os.ReadFile(result)
	if err != nil {
		t.Fatal(err)
	}
	var streamed map[string]struct {
		ID     string  `json:"id"`
		Events [][]any `json:"events"` // [seq, type]
	}
	if err := json.Unmarshal(b, &streamed); err != nil {
		t.Fatal(err)
	}
	cases := slices.Sorted(maps.Keys(streamed))
	if want := []string{"approve", "fork", "hello", "reply", "rewind", "terminate"}; !slices.Equal(cases, want) {
		t.Fatalf("streamed sessions %v, want %v", cases, want)
	}
	for name, sess := range streamed {
		got := make([]string, len(sess.Events))
		for i, e := range sess.Events {
			got[i] = fmt.Sprint(e...)
		}
		if log := s.logOf(t, sess.ID); !slices.Equal(got, log) {
			t.Errorf("%s: the client streamed\n%v\nthe log is\n%v", name, got, log)
		}
	}
}

// The stream's reader, against what the real server never sends but a
// network or another server may: messages split at every byte, CR and
// CRLF line ends, a message cut off, 503 and 429, a page that is not a
// stream, a connection gone silent (but not a caller slow to take an
// event); and a loop that breaks or a signal that aborts closes it.
func TestStreamEdgeCases(t *testing.T) {
	dir := nodetest.Project(t, project)
	build(t, dir)
	allPassed(t, nodetest.Run(t, dir, "test/stream.test.mjs", time.Minute), 11)
}

// allPassed checks node:test's summary: n tests ran, and all passed (a
// test file that stopped registering tests fails here too).
func allPassed(t *testing.T, out string, n int) {
	t.Helper()
	for _, line := range []string{fmt.Sprintf("# tests %d", n), fmt.Sprintf("# pass %d", n), "# fail 0"} {
		if !regexp.MustCompile(`(?m)^` + line + `$`).MatchString(out) {
			t.Fatalf("want %q in the Node tests' summary:\n%s", line, out)
		}
	}
}

// logOf reads a session's whole log as "seq type" lines.
func (s *server) logOf(t *testing.T, id string) []string {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), "GET", s.url+"/v1/sessions/"+id+"/events?limit=1000", nil)
	req.Header.Set("Authorization", "Bearer "+s.viewer)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var page struct {
		Events []struct {
			Seq  int64  `json:"seq"`
			Type string `json:"type"`
		} `json:"events"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&page); err != nil || resp.StatusCode != 200 {
		t.Fatalf("events of %s: %d %v", id, resp.StatusCode, err)
	}
	out := make([]string, len(page.Events))
	for i, e := range page.Events {
		out[i] = fmt.Sprint(e.Seq, e.Type)
	}
	return out
}

var (
	buildOnce sync.Once
	buildOut  []byte
	buildErr  error
)

// build compiles src/ into dist/, which the Node tests import: once for
// all the tests of a run.
func build(t *testing.T, dir string) {
	t.Helper()
	buildOnce.Do(func() {
		cmd := exec.Command("node", "node_modules/typescript/bin/tsc", "-p", "tsconfig.json")
		cmd.Dir = dir
		buildOut, buildErr = cmd.CombinedOutput()
	})
	if buildErr != nil {
		t.Fatalf("tsc -p tsconfig.json: %v\n%s", buildErr, buildOut)
	}
}

// node runs a Node script with arguments in dir and fails the test with
// its output when it fails.
func node(t *testing.T, dir string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("node %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// server is a running `agentloop serve --auth keys` and two keys of one
// tenant.
type server struct {
	url      string
	operator string // starts and controls sessions
	viewer   string // only reads
}

// serve builds the binary and starts `agentloop serve --auth keys` with a
// fresh database, allowing scripted models, and makes an operator and a
// viewer key of one tenant.
func serve(t *testing.T) *server {
	t.Helper()
	al := nodetest.Build(t)
	s := &server{operator: al.Key(t, "ts-client", "operator"), viewer: al.Key(t, "ts-client", "viewer")}
	s.url = al.Serve(t, "--auth", "keys")
	return s
}

// firstDifference shows the first line where a and b differ.
func firstDifference(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := 0; i < max(len(al), len(bl)); i++ {
		var x, y string
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if x != y {
			return fmt.Sprintf("line %d: committed %q, generated %q", i+1, x, y)
		}
	}
	return ""
}

// syncBuffer is a bytes.Buffer safe to read while a process writes to it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
