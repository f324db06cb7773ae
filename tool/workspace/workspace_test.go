package workspace

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/tool"
)

// layout builds base/ws (the workspace) next to base/outside, with symlinks
// of every kind, and returns the workspace and the outside directory.
func layout(t *testing.T) (*Workspace, string) {
	t.Helper()
	base := t.TempDir()
	root := filepath.Join(base, "ws")
	outside := filepath.Join(base, "outside")
	for _, d := range []string{root, outside, filepath.Join(root, "sub", "deep")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write(t, filepath.Join(outside, "secret"), "secret\n")
	write(t, filepath.Join(root, "a.txt"), "a\n")
	links := map[string]string{
		"toout":        outside,                          // absolute, outside
		"rel_out":      "../outside",                     // relative, outside
		"file_link":    filepath.Join(outside, "secret"), // final component, outside
		"dangling_out": filepath.Join(outside, "new"),    // final component, does not exist
		"in_link":      "sub",                            // relative, inside
		"abs_in":       filepath.Join(root, "sub"),       // absolute, inside
		"sub/up":       "..",                             // climbs to the root
		"sub/upup":     "../..",                          // climbs out
		"loop1":        "loop2",
		"loop2":        "loop1",
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(root, name)); err != nil {
			t.Fatal(err)
		}
	}
	ws, err := New(root)
	if err != nil {
		t.Fatal(err)
	}
	return ws, outside
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestResolve(t *testing.T) {
	ws, outside := layout(t)
	root := ws.Root()
	tests := []struct {
		path    string
		want    string // relative to root; "" when refused
		outside bool   // refused as outside the workspace
		link    string // the symlink named in the error
	}{
		{path: "a.txt", want: "a.txt"},
		{path: "", want: "."},
		{path: ".", want: "."},
		{path: "sub/deep/", want: "sub/deep"},
		{path: "new/dir/file.go", want: "new/dir/file.go"},
		{path: "sub/../a.txt", want: "a.txt"},
		{path: filepath.Join(root, "sub", "x"), want: "sub/x"},
		{path: root, want: "."},
		{path: "in_link/x", want: "sub/x"},
		{path: "abs_in/deep", want: "sub/deep"},
		{path: "sub/up/a.txt", want: "a.txt"},
		{path: "a.txt/child", want: "a.txt/child"}, // the operation reports ENOTDIR

		{path: "../x", outside: true},
		{path: "..", outside: true},
		{path: "a/../../x", outside: true},
		{path: "sub/../../x", outside: true},
		{path: "/etc/passwd", outside: true},
		{path: filepath.Join(outside, "secret"), outside: true},
		{path: root + "-sibling/x", outside: true},
		{path: "toout/secret", outside: true, link: "toout"},
		{path: "rel_out/secret", outside: true, link: "rel_out"},
		{path: "file_link", outside: true, link: "file_link"},
		{path: "dangling_out", outside: true, link: "dangling_out"},
		{path: "sub/upup/outside/secret", outside: true, link: "sub/upup"},
		{path: "in_link/../../x", outside: true}, // climbs out by itself; no link to blame
		{path: filepath.Join(root, "..", "outside"), outside: true},
		{path: "loop1"},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			got, err := ws.Resolve(tt.path)
			if tt.want != "" {
				if err != nil {
					t.Fatalf("Resolve(%q): %v", tt.path, err)
				}
				if want := filepath.Join(root, tt.want); got != want {
					t.Fatalf("Resolve(%q) = %s, want %s", tt.path, got, want)
				}
				return
			}
			if err == nil {
				t.Fatalf("Resolve(%q) = %s, want an error", tt.path, got)
			}
			if errors.Is(err, ErrOutside) != tt.outside {
				t.Fatalf("Resolve(%q): errors.Is(err, ErrOutside) = %v, want %v (err: %v)", tt.path, !tt.outside, tt.outside, err)
			}
			msg := err.Error()
			if tt.outside {
				if !strings.Contains(msg, "outside the workspace "+root) || !strings.Contains(msg, tt.path) {
					t.Errorf("message %q should name the path and the workspace", msg)
				}
				if tt.link != "" && !strings.Contains(msg, "symlink "+tt.link+" -> ") {
					t.Errorf("message %q should name the symlink %s", msg, tt.link)
				}
				if tt.link == "" && strings.Contains(msg, "symlink") {
					t.Errorf("message %q blames a symlink", msg)
				}
			}
		})
	}
}

func TestResolveMessage(t *testing.T) {
	ws, _ := layout(t)
	_, err := ws.Resolve("../x")
	want := "path ../x is outside the workspace " + ws.Root() + "; use a path relative to the workspace root"
	if err == nil || err.Error() != want {
		t.Fatalf("got %v, want %q", err, want)
	}
}

// A workspace given through a symlinked path accepts absolute paths in
// either form.
func TestResolveSymlinkedRoot(t *testing.T) {
	base := t.TempDir()
	real := filepath.Join(base, "real")
	if err := os.Mkdir(real, 0o755); err != nil {
		t.Fatal(err)
	}
	alias := filepath.Join(base, "alias")
	if err := os.Symlink(real, alias); err != nil {
		t.Fatal(err)
	}
	ws, err := New(alias)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{filepath.Join(alias, "f"), filepath.Join(real, "f")} {
		got, err := ws.Resolve(p)
		if err != nil || got != filepath.Join(real, "f") {
			t.Errorf("Resolve(%s) = %s, %v", p, got, err)
		}
	}
	if got := ws.Rel(filepath.Join(alias, "x", "y")); got != "x/y" {
		t.Errorf("Rel = %q", got)
	}
}

func TestNewErrors(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	write(t, file, "")
	for _, p := range []string{filepath.Join(dir, "missing"), file} {
		if _, err := New(p); err == nil {
			t.Errorf("New(%s) succeeded", p)
		}
	}
}

func TestRecordMerges(t *testing.T) {
	tests := []struct {
		kinds []tool.ModificationKind
		want  tool.ModificationKind // "" for no change
	}{
		{[]tool.ModificationKind{tool.Created}, tool.Created},
		{[]tool.ModificationKind{tool.Created, tool.Changed, tool.Changed}, tool.Created},
		{[]tool.ModificationKind{tool.Created, tool.Deleted}, ""},
		{[]tool.ModificationKind{tool.Created, tool.Deleted, tool.Created}, tool.Created},
		{[]tool.ModificationKind{tool.Changed, tool.Changed}, tool.Changed},
		{[]tool.ModificationKind{tool.Changed, tool.Deleted}, tool.Deleted},
		{[]tool.ModificationKind{tool.Deleted, tool.Created}, tool.Changed},
		{[]tool.ModificationKind{tool.Deleted, tool.Deleted}, tool.Deleted},
	}
	for _, tt := range tests {
		ws, err := New(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range tt.kinds {
			ws.Record("f.txt", k)
		}
		var want []tool.Modification
		if tt.want != "" {
			want = []tool.Modification{{Path: "f.txt", Kind: tt.want}}
		}
		got := ws.Changes()
		if len(got) == 0 && len(want) == 0 {
			continue
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%v: Changes() = %v, want %v", tt.kinds, got, want)
		}
	}
}

func TestChangesSortedAndNormalized(t *testing.T) {
	ws, err := New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var reported []tool.Modification
	ctx := tool.WithReporter(context.Background(), func(m tool.Modification) { reported = append(reported, m) })
	ws.Report(ctx, filepath.Join(ws.Root(), "z", "b.go"), tool.Changed)
	ws.Report(ctx, "./a.go", tool.Created)
	ws.Report(ctx, "z/b.go", tool.Changed)
	ws.Record("../elsewhere", tool.Created) // outside: ignored
	ws.Record("/etc/passwd", tool.Changed)  // outside: ignored
	want := []tool.Modification{{Path: "a.go", Kind: tool.Created}, {Path: "z/b.go", Kind: tool.Changed}}
	if got := ws.Changes(); !reflect.DeepEqual(got, want) {
		t.Errorf("Changes() = %v, want %v", got, want)
	}
	wantReported := []tool.Modification{{Path: "z/b.go", Kind: tool.Changed}, {Path: "a.go", Kind: tool.Created}, {Path: "z/b.go", Kind: tool.Changed}}
	if !reflect.DeepEqual(reported, wantReported) {
		t.Errorf("reported %v, want %v", reported, wantReported)
	}
}

func TestWorkspaceDiff(t *testing.T) {
	ws, err := New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	root := ws.Root()
	path := func(p string) string { return filepath.Join(root, p) }
	write(t, path("edit.txt"), "one\ntwo\nthree\n")
	write(t, path("gone.txt"), "bye\n")
	write(t, path("bin"), "a\x00b")
	write(t, path("big.txt"), strings.Repeat("x", MaxSnapshotBytes+1))
	write(t, path("by_shell.txt"), "old\n")
	write(t, path("restored.txt"), "same\n")

	change := func(p string, kind tool.ModificationKind, content *string) {
		t.Helper()
		if err := ws.BeforeChange(path(p)); err != nil {
			t.Fatal(err)
		}
		if content == nil {
			if err := os.Remove(path(p)); err != nil {
				t.Fatal(err)
			}
		} else {
			write(t, path(p), *content)
		}
		ws.Record(p, kind)
	}
	str := func(s string) *string { return &s }
	change("edit.txt", tool.Changed, str("one\n2\nthree\n"))
	change("edit.txt", tool.Changed, str("one\n2\nthree\nfour\n")) // diffed against the first snapshot
	change("new/created.txt", tool.Created, str("hello\n"))
	change("gone.txt", tool.Deleted, nil)
	change("bin", tool.Changed, str("a\x00c"))
	change("big.txt", tool.Changed, str("small\n"))
	change("restored.txt", tool.Changed, str("different\n"))
	change("restored.txt", tool.Changed, str("same\n"))
	// A command changed these; nobody snapshotted them first.
	write(t, path("by_shell.txt"), "new\n")
	ws.Record("by_shell.txt", tool.Changed)
	write(t, path("shell_new.txt"), "fresh\n")
	ws.Record("shell_new.txt", tool.Created)

	got, err := ws.Diff()
	if err != nil {
		t.Fatal(err)
	}
	want := `# big.txt: changed; its earlier content is larger than 1024 KiB, so no diff is shown
Binary files a/bin and b/bin differ
# by_shell.txt: changed by a command; its earlier content was not recorded, so no diff is shown
--- a/edit.txt
+++ b/edit.txt
@@ -1,3 +1,4 @@
 one
-two
+2
 three
+four
--- a/gone.txt
+++ /dev/null
@@ -1 +0,0 @@
-bye
--- /dev/null
+++ b/new/created.txt
@@ -0,0 +1 @@
+hello
--- /dev/null
+++ b/shell_new.txt
@@ -0,0 +1 @@
+fresh
`
	if got != want {
		t.Errorf("Diff() =\n%s\nwant\n%s", got, want)
	}
}
