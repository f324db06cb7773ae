package fs_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"

	"github.com/agentloop/agentloop/tool"
	"github.com/agentloop/agentloop/tool/fs"
	"github.com/agentloop/agentloop/tool/workspace"
)

// env is a workspace with its file tools in a registry.
type env struct {
	t        *testing.T
	ws       *workspace.Workspace
	root     string
	reg      *tool.Registry
	reported []tool.Modification
}

func newEnv(t *testing.T) *env {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "ws")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	ws, err := workspace.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	reg, err := tool.NewRegistry(fs.Tools(ws)...)
	if err != nil {
		t.Fatal(err)
	}
	return &env{t: t, ws: ws, root: ws.Root(), reg: reg}
}

// call runs a tool through the registry (so arguments are validated) with a
// reporter installed.
func (e *env) call(name string, args map[string]any) tool.Result {
	e.t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		e.t.Fatal(err)
	}
	ctx := tool.WithReporter(e.t.Context(), func(m tool.Modification) { e.reported = append(e.reported, m) })
	return e.reg.Call(ctx, name, raw)
}

func (e *env) write(rel, content string) {
	e.t.Helper()
	p := filepath.Join(e.root, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		e.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) read(rel string) string {
	e.t.Helper()
	b, err := os.ReadFile(filepath.Join(e.root, rel))
	if err != nil {
		e.t.Fatal(err)
	}
	return string(b)
}

func lines(n int, format string) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, format+"\n", i)
	}
	return b.String()
}

func TestToolDeclarations(t *testing.T) {
	e := newEnv(t)
	want := map[string]struct {
		effect     tool.Effect
		idempotent bool
		required   []string
	}{
		"read_file":   {tool.EffectRead, true, []string{"path"}},
		"list_dir":    {tool.EffectRead, true, nil},
		"search":      {tool.EffectRead, true, []string{"pattern"}},
		"write_file":  {tool.EffectWrite, true, []string{"path", "content"}},
		"edit_file":   {tool.EffectWrite, false, []string{"path", "old_text", "new_text"}},
		"delete_file": {tool.EffectWrite, true, []string{"path"}},
	}
	if got := len(e.reg.Names()); got != len(want) {
		t.Fatalf("registry has %d tools, want %d", got, len(want))
	}
	for _, spec := range e.reg.Specs() {
		w, ok := want[spec.Name]
		if !ok {
			t.Errorf("unexpected tool %s", spec.Name)
			continue
		}
		tl, _ := e.reg.Lookup(spec.Name)
		if tool.EffectOf(tl) != w.effect || tool.IsIdempotent(tl) != w.idempotent {
			t.Errorf("%s: effect %s idempotent %v, want %s %v", spec.Name, tool.EffectOf(tl), tool.IsIdempotent(tl), w.effect, w.idempotent)
		}
		if len(spec.Description) < 40 {
			t.Errorf("%s: description too short: %q", spec.Name, spec.Description)
		}
		var schema struct {
			Required             []string `json:"required"`
			AdditionalProperties *bool    `json:"additionalProperties"`
		}
		if err := json.Unmarshal(spec.Parameters, &schema); err != nil {
			t.Fatalf("%s: %v", spec.Name, err)
		}
		if schema.AdditionalProperties == nil || *schema.AdditionalProperties {
			t.Errorf("%s: schema must set additionalProperties false", spec.Name)
		}
		if !reflect.DeepEqual(schema.Required, w.required) {
			t.Errorf("%s: required %v, want %v", spec.Name, schema.Required, w.required)
		}
		// Unknown arguments are refused before the tool runs.
		res := e.call(spec.Name, map[string]any{"path": "x", "pattern": "x", "content": "", "old_text": "a", "new_text": "b", "bogus": 1})
		if !res.IsError || !strings.Contains(res.Output, "bogus") {
			t.Errorf("%s accepted an unknown argument: %+v", spec.Name, res)
		}
	}
}

func TestReadFile(t *testing.T) {
	e := newEnv(t)
	e.write("small.txt", "alpha\nbeta\ngamma\n")
	e.write("noeol.txt", "one\ntwo")
	e.write("empty.txt", "")
	e.write("long.txt", lines(2500, "line %d"))
	e.write("wide.txt", lines(2000, "%04d "+strings.Repeat("x", 195)))
	e.write("oneline.txt", strings.Repeat("é", 3000)+"\nshort\n")
	e.write("bin.dat", "PK\x03\x04\x00\x00binary")
	e.write("dir/inner.txt", "x\n")
	if err := syscall.Mkfifo(filepath.Join(e.root, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name    string
		args    map[string]any
		want    string // exact output, or
		has     []string
		isError bool
	}{
		{name: "whole file", args: map[string]any{"path": "small.txt"},
			want: "     1\talpha\n     2\tbeta\n     3\tgamma\n"},
		{name: "no final newline", args: map[string]any{"path": "noeol.txt"},
			want: "     1\tone\n     2\ttwo\n"},
		{name: "range", args: map[string]any{"path": "small.txt", "start_line": 2, "end_line": 2},
			want: "     2\tbeta\n[showing lines 2-2 of 3]\n"},
		{name: "end past the end is clamped", args: map[string]any{"path": "small.txt", "start_line": 3, "end_line": 99},
			want: "     3\tgamma\n[showing lines 3-3 of 3]\n"},
		{name: "empty", args: map[string]any{"path": "empty.txt"}, want: "empty.txt is empty (0 lines)"},
		{name: "line cap", args: map[string]any{"path": "long.txt"},
			has: []string{"     1\tline 1\n", "  2000\tline 2000\n", "[truncated: showing lines 1-2000 of 2500; use start_line/end_line to read the rest]"}},
		{name: "second part", args: map[string]any{"path": "long.txt", "start_line": 2001},
			has: []string{"  2001\tline 2001\n", "  2500\tline 2500\n", "[showing lines 2001-2500 of 2500]"}},
		{name: "byte cap", args: map[string]any{"path": "wide.txt"},
			has: []string{"[truncated at 256 KiB: showing lines 1-1260 of 2000; use start_line/end_line to read the rest]"}},
		{name: "long line", args: map[string]any{"path": "oneline.txt"},
			has: []string{" … [line truncated: 4000 more bytes]\n", "     2\tshort\n"}},
		{name: "start past the end", args: map[string]any{"path": "small.txt", "start_line": 9}, isError: true,
			has: []string{"start_line 9 is past the end of small.txt, which has 3 lines"}},
		{name: "end before start", args: map[string]any{"path": "small.txt", "start_line": 3, "end_line": 2}, isError: true,
			has: []string{"end_line 2 is before start_line 3"}},
		{name: "missing", args: map[string]any{"path": "nope.go"}, isError: true,
			has: []string{"nope.go does not exist; use list_dir or search to find the right path"}},
		{name: "directory", args: map[string]any{"path": "dir"}, isError: true,
			has: []string{"dir is a directory, not a file; use list_dir"}},
		{name: "binary", args: map[string]any{"path": "bin.dat"}, isError: true,
			has: []string{"bin.dat is a binary file (12 bytes); read_file shows text files only"}},
		{name: "fifo", args: map[string]any{"path": "fifo"}, isError: true, has: []string{"fifo is not a regular file"}},
		{name: "zero start_line fails the schema", args: map[string]any{"path": "small.txt", "start_line": 0}, isError: true,
			has: []string{"start_line"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := e.call("read_file", tt.args)
			if res.IsError != tt.isError {
				t.Fatalf("IsError = %v, output:\n%s", res.IsError, res.Output)
			}
			if tt.want != "" && res.Output != tt.want {
				t.Errorf("output:\n%q\nwant\n%q", res.Output, tt.want)
			}
			for _, h := range tt.has {
				if !strings.Contains(res.Output, h) {
					t.Errorf("output lacks %q:\n%.600s", h, res.Output)
				}
			}
		})
	}
	// Nothing the read tools do counts as a modification.
	if len(e.reported) != 0 || len(e.ws.Changes()) != 0 {
		t.Errorf("reads reported modifications: %v", e.reported)
	}
}

func TestWriteFile(t *testing.T) {
	e := newEnv(t)
	res := e.call("write_file", map[string]any{"path": "src/pkg/a.go", "content": "package pkg\n\nvar A = 1\n"})
	if res.IsError || res.Output != "created src/pkg/a.go (3 lines, 23 bytes)" {
		t.Fatalf("%+v", res)
	}
	if got := e.read("src/pkg/a.go"); got != "package pkg\n\nvar A = 1\n" {
		t.Fatalf("content %q", got)
	}
	res = e.call("write_file", map[string]any{"path": "src/pkg/a.go", "content": "package pkg\n"})
	if res.IsError || res.Output != "overwrote src/pkg/a.go (1 line, 12 bytes)" {
		t.Fatalf("%+v", res)
	}
	res = e.call("write_file", map[string]any{"path": "src/pkg/a.go", "content": "package pkg\n"})
	if res.IsError || res.Output != "src/pkg/a.go already has this content; nothing changed" {
		t.Fatalf("%+v", res)
	}
	wantReported := []tool.Modification{{Path: "src/pkg/a.go", Kind: tool.Created}, {Path: "src/pkg/a.go", Kind: tool.Changed}}
	if !reflect.DeepEqual(e.reported, wantReported) {
		t.Errorf("reported %v, want %v", e.reported, wantReported)
	}
	if got := e.ws.Changes(); !reflect.DeepEqual(got, []tool.Modification{{Path: "src/pkg/a.go", Kind: tool.Created}}) {
		t.Errorf("Changes() = %v", got)
	}

	// A symlink inside the workspace is written through to its target.
	e.write("real.txt", "old\n")
	if err := os.Symlink("real.txt", filepath.Join(e.root, "alias.txt")); err != nil {
		t.Fatal(err)
	}
	if res := e.call("write_file", map[string]any{"path": "alias.txt", "content": "new\n"}); res.IsError || !strings.Contains(res.Output, "real.txt") {
		t.Fatalf("%+v", res)
	}
	if e.read("real.txt") != "new\n" {
		t.Error("write through an inside symlink did not reach its target")
	}

	e.write("file", "x")
	for _, tt := range []struct{ path, want string }{
		{"src", "src is a directory; give the path of a file inside it"},
		{".git/config", "path .git/config is inside a .git directory"},
		{".", `path "." is the workspace root directory`},
		{"file/child.txt", "file/child.txt: a parent of this path is a file, not a directory"},
	} {
		res := e.call("write_file", map[string]any{"path": tt.path, "content": "x"})
		if !res.IsError || !strings.Contains(res.Output, tt.want) {
			t.Errorf("write_file %s: %+v, want error containing %q", tt.path, res, tt.want)
		}
	}
	if _, err := os.Stat(filepath.Join(e.root, ".git")); err == nil {
		t.Error(".git was created")
	}
}

func TestEditFile(t *testing.T) {
	var many strings.Builder
	for i := 1; i <= 40; i++ {
		if i == 4 || i == 19 || i == 33 {
			many.WriteString("\treturn nil\n")
		} else {
			fmt.Fprintf(&many, "// line %d\n", i)
		}
	}
	tests := []struct {
		name    string
		file    string
		args    map[string]any
		isError bool
		has     string
		after   string // file content afterwards ("" = unchanged)
	}{
		{
			name: "unique", file: "a\nb\nc\n",
			args:  map[string]any{"old_text": "b\n", "new_text": "B\nB2\n"},
			has:   "edited src/a.go: replaced 1 occurrence at line 2\n     1\ta\n     2\tB\n     3\tB2\n     4\tc\n",
			after: "a\nB\nB2\nc\n",
		},
		{
			name: "missing", file: "a\nb\n", isError: true,
			args: map[string]any{"old_text": "zzz", "new_text": "y"},
			has:  "old_text not found in src/a.go; read the file first and copy the exact text",
		},
		{
			name: "not unique", file: many.String(), isError: true,
			args: map[string]any{"old_text": "\treturn nil\n", "new_text": "\treturn err\n"},
			has:  "old_text occurs 3 times in src/a.go (lines 4, 19, 33); include more surrounding lines to make it unique, or set replace_all to true",
		},
		{
			name: "replace all", file: "x = 1\ny = x\nx\n",
			args:  map[string]any{"old_text": "x", "new_text": "z", "replace_all": true},
			has:   "edited src/a.go: replaced 3 occurrences (lines 1, 2, 3)",
			after: "z = 1\ny = z\nz\n",
		},
		{
			name: "windows line endings", file: "one\r\ntwo\r\nthree\r\n",
			args:  map[string]any{"old_text": "one\ntwo\n", "new_text": "1\n2\n"},
			after: "1\r\n2\r\nthree\r\n",
		},
		{
			name: "whitespace hint", file: "func f() {\n\tif x {\n\t\treturn\n\t}\n}\n", isError: true,
			args: map[string]any{"old_text": "if x {\n  return\n}", "new_text": "y"},
			has:  "Lines 2-4 match if whitespace is ignored; copy their exact indentation",
		},
		{
			name: "line numbers copied", file: "a\nb\n", isError: true,
			args: map[string]any{"old_text": "     1\ta\n     2\tb\n", "new_text": "y"},
			has:  "copy only the text after the tab",
		},
		{
			name: "identical", file: "a\n", isError: true,
			args: map[string]any{"old_text": "a", "new_text": "a"},
			has:  "old_text and new_text are identical",
		},
		{
			name: "empty old_text fails the schema", file: "a\n", isError: true,
			args: map[string]any{"old_text": "", "new_text": "a"},
			has:  "old_text",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			e.write("src/a.go", tt.file)
			tt.args["path"] = "src/a.go"
			res := e.call("edit_file", tt.args)
			if res.IsError != tt.isError || !strings.Contains(res.Output, tt.has) {
				t.Fatalf("got %+v\nwant IsError=%v and output containing %q", res, tt.isError, tt.has)
			}
			want := tt.after
			if want == "" {
				want = tt.file
			}
			if got := e.read("src/a.go"); got != want {
				t.Errorf("file is %q, want %q", got, want)
			}
			wantReported := []tool.Modification(nil)
			if !tt.isError {
				wantReported = []tool.Modification{{Path: "src/a.go", Kind: tool.Changed}}
			}
			if !reflect.DeepEqual(e.reported, wantReported) {
				t.Errorf("reported %v, want %v", e.reported, wantReported)
			}
		})
	}

	e := newEnv(t)
	res := e.call("edit_file", map[string]any{"path": "nope.go", "old_text": "a", "new_text": "b"})
	if !res.IsError || !strings.Contains(res.Output, "nope.go does not exist") {
		t.Errorf("%+v", res)
	}
}

func TestDeleteFile(t *testing.T) {
	e := newEnv(t)
	e.write("a.txt", "a\n")
	e.write("dir/b.txt", "b\n")
	if err := os.Symlink("dir/b.txt", filepath.Join(e.root, "link")); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		path    string
		isError bool
		has     string
	}{
		{"a.txt", false, "deleted a.txt"},
		{"a.txt", true, "a.txt does not exist, so nothing was deleted"},
		{"dir", true, "dir is a directory; delete_file deletes single files"},
		{"link", false, "deleted the symlink link"},
		{".", true, "workspace root directory"},
	}
	for _, tt := range tests {
		res := e.call("delete_file", map[string]any{"path": tt.path})
		if res.IsError != tt.isError || !strings.Contains(res.Output, tt.has) {
			t.Errorf("delete_file %s: %+v, want IsError=%v containing %q", tt.path, res, tt.isError, tt.has)
		}
	}
	if e.read("dir/b.txt") != "b\n" {
		t.Error("deleting a symlink removed its target")
	}
	want := []tool.Modification{{Path: "a.txt", Kind: tool.Deleted}, {Path: "link", Kind: tool.Deleted}}
	if !reflect.DeepEqual(e.reported, want) {
		t.Errorf("reported %v, want %v", e.reported, want)
	}
}

func TestListDir(t *testing.T) {
	e := newEnv(t)
	e.write("README.md", "")
	e.write("src/main.go", "")
	e.write("src/pkg/deep/x.go", "")
	e.write(".git/HEAD", "")
	e.write("node_modules/lib/index.js", "")
	if err := os.Symlink("src/main.go", filepath.Join(e.root, "main-link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(e.root, "empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args    map[string]any
		want    string
		isError bool
	}{
		{map[string]any{}, "./\n  README.md\n  empty/\n  main-link -> src/main.go\n  node_modules/ (not expanded)\n  src/\n    main.go\n    pkg/\n", false},
		{map[string]any{"path": "src", "depth": 6}, "src/\n  main.go\n  pkg/\n    deep/\n      x.go\n", false},
		{map[string]any{"path": "src", "depth": 1}, "src/\n  main.go\n  pkg/\n", false},
		{map[string]any{"path": "node_modules"}, "node_modules/\n  lib/\n    index.js\n", false},
		{map[string]any{"path": "empty"}, "empty/\n  (empty directory)\n", false},
		{map[string]any{"path": "README.md"}, "README.md is a file, not a directory; use read_file to read it", true},
		{map[string]any{"depth": 7}, "depth", true},
	}
	for _, tt := range tests {
		res := e.call("list_dir", tt.args)
		if res.IsError != tt.isError || !strings.Contains(res.Output, tt.want) {
			t.Errorf("list_dir %v:\n%s\nwant IsError=%v and\n%s", tt.args, res.Output, tt.isError, tt.want)
		}
	}

	for i := range fs.MaxListEntries + 10 {
		e.write(fmt.Sprintf("many/f%04d", i), "")
	}
	res := e.call("list_dir", map[string]any{"path": "many"})
	if got := strings.Count(res.Output, "\n  f"); got != fs.MaxListEntries {
		t.Errorf("%d entries shown", got)
	}
	if !strings.HasSuffix(res.Output, "[truncated: showing the first 500 entries; list a subdirectory or use a smaller depth]\n") {
		t.Errorf("no truncation marker: %s", res.Output[len(res.Output)-200:])
	}
}

func TestSearch(t *testing.T) {
	e := newEnv(t)
	e.write("a.go", "package a\n\nfunc Alpha() {}\nfunc beta() {}\n")
	e.write("sub/b.go", "package sub\n\nfunc Gamma() {}\n")
	e.write("sub/c.txt", "func in text\n")
	e.write("bin.o", "func\x00binary")
	e.write(".git/objects/x", "func in git\n")
	e.write("node_modules/m/i.js", "func in deps\n")
	e.write("long.txt", "func "+strings.Repeat("y", 400)+"\n")

	tests := []struct {
		args    map[string]any
		want    string
		isError bool
	}{
		{map[string]any{"pattern": `^func [A-Z]`},
			"a.go:3: func Alpha() {}\nsub/b.go:3: func Gamma() {}\n(skipped 1 binary file)\n", false},
		{map[string]any{"pattern": `func`, "glob": "*.go"},
			"a.go:3: func Alpha() {}\na.go:4: func beta() {}\nsub/b.go:3: func Gamma() {}\n", false},
		{map[string]any{"pattern": `func`, "glob": "sub/*.txt"}, "sub/c.txt:1: func in text\n", false},
		{map[string]any{"pattern": `func`, "path": "sub", "glob": "*.txt"}, "sub/c.txt:1: func in text\n", false},
		{map[string]any{"pattern": `func`, "path": "sub/b.go"}, "sub/b.go:3: func Gamma() {}\n", false},
		{map[string]any{"pattern": `deps`, "path": "node_modules"}, "node_modules/m/i.js:1: func in deps\n", false},
		{map[string]any{"pattern": `(?i)ALPHA`}, "a.go:3: func Alpha() {}\n", false},
		{map[string]any{"pattern": `func y+`}, "long.txt:1: func " + strings.Repeat("y", 295) + " …\n", false},
		{map[string]any{"pattern": `nothing here`}, `no matches for "nothing here" in .`, false},
		{map[string]any{"pattern": `func`, "max_results": 2},
			"a.go:3: func Alpha() {}\na.go:4: func beta() {}\n[truncated: showing the first 2 matches; narrow the pattern, path or glob, or raise max_results (at most 1000)]\n", false},
		{map[string]any{"pattern": `func(`}, "pattern \"func(\" is not a valid regular expression: error parsing regexp: missing closing ): `func(`; the syntax is Go RE2", true},
		{map[string]any{"pattern": `x`, "glob": "[a"}, `glob "[a" is not a valid pattern`, true},
		{map[string]any{"pattern": `x`, "path": "missing"}, "missing does not exist", true},
	}
	for _, tt := range tests {
		res := e.call("search", tt.args)
		if res.IsError != tt.isError || !strings.Contains(res.Output, tt.want) {
			t.Errorf("search %v:\n%s\nwant IsError=%v and\n%s", tt.args, res.Output, tt.isError, tt.want)
		}
		if !tt.isError && (strings.Contains(res.Output, "in git") || (tt.args["path"] == nil && strings.Contains(res.Output, "deps"))) {
			t.Errorf("search %v looked inside .git or node_modules:\n%s", tt.args, res.Output)
		}
	}
}

// TestSessionDiff runs the tools and checks the workspace diff they leave.
func TestSessionDiff(t *testing.T) {
	e := newEnv(t)
	e.write("main.go", "package main\n\nfunc main() {\n\tprintln(\"hi\")\n}\n")
	e.write("old.txt", "remove me\n")
	for _, c := range []struct {
		name string
		args map[string]any
	}{
		{"edit_file", map[string]any{"path": "main.go", "old_text": `println("hi")`, "new_text": `println("hello")`}},
		{"write_file", map[string]any{"path": "docs/notes.md", "content": "# Notes\n"}},
		{"delete_file", map[string]any{"path": "old.txt"}},
	} {
		if res := e.call(c.name, c.args); res.IsError {
			t.Fatalf("%s: %s", c.name, res.Output)
		}
	}
	got, err := e.ws.Diff()
	if err != nil {
		t.Fatal(err)
	}
	want := `--- /dev/null
+++ b/docs/notes.md
@@ -0,0 +1 @@
+# Notes
--- a/main.go
+++ b/main.go
@@ -1,5 +1,5 @@
 package main
 
 func main() {
-	println("hi")
+	println("hello")
 }
--- a/old.txt
+++ /dev/null
@@ -1 +0,0 @@
-remove me
`
	if got != want {
		t.Errorf("Diff:\n%s\nwant\n%s", got, want)
	}
}
