package fs_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// tree records every entry under dir: its mode, and content for files.
func tree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		v := info.Mode().String()
		if info.Mode().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			v += " " + string(b)
		}
		out[p] = v
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestPathEscapes tries every way out of the workspace against every file
// tool and checks that each is refused and nothing outside is read or
// touched.
func TestPathEscapes(t *testing.T) {
	e := newEnv(t)
	base := filepath.Dir(e.root)
	outside := filepath.Join(base, "outside")
	sibling := e.root + "2" // shares the root's name as a prefix
	for _, d := range []string{filepath.Join(outside, "dir"), sibling} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	const secret = "TOPSECRET"
	for _, p := range []string{filepath.Join(outside, "secret"), filepath.Join(outside, "dir", "secret"), filepath.Join(sibling, "secret")} {
		if err := os.WriteFile(p, []byte(secret+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	e.write("a/inside.txt", "inside\n")
	for name, target := range map[string]string{
		"link_dir":  outside,                               // symlinked parent directory
		"link_rel":  "../outside",                          // relative symlink out
		"link_file": filepath.Join(outside, "secret"),      // symlink to an outside file
		"dangling":  filepath.Join(outside, "created-new"), // final component pointing at a file to be created
		"a/up":      "../..",                               // intermediate link climbing out
	} {
		if err := os.Symlink(target, filepath.Join(e.root, name)); err != nil {
			t.Fatal(err)
		}
	}
	before := tree(t, base)

	files := []string{
		"../outside/secret",
		"/etc/passwd",
		filepath.Join(outside, "secret"),
		filepath.Join(sibling, "secret"),
		"link_dir/secret",
		"link_dir/dir/secret",
		"link_rel/secret",
		"link_dir/new.txt",
		"link_file",
		"dangling",
		"a/up/outside/secret",
		"a/../../outside/secret",
	}
	dirs := []string{
		"..",
		"../outside",
		"/etc",
		outside,
		sibling,
		"link_dir",
		"link_rel/dir",
		"a/up",
		"a/../../outside",
	}
	calls := []struct {
		tool  string
		paths []string
		args  func(p string) map[string]any
	}{
		{"read_file", files, func(p string) map[string]any { return map[string]any{"path": p} }},
		{"write_file", files, func(p string) map[string]any { return map[string]any{"path": p, "content": "PWNED\n"} }},
		{"edit_file", files, func(p string) map[string]any {
			return map[string]any{"path": p, "old_text": secret, "new_text": "PWNED"}
		}},
		{"delete_file", files, func(p string) map[string]any { return map[string]any{"path": p} }},
		{"list_dir", dirs, func(p string) map[string]any { return map[string]any{"path": p} }},
		{"search", append(dirs, files...), func(p string) map[string]any { return map[string]any{"pattern": secret + "|root:", "path": p} }},
	}
	for _, c := range calls {
		for _, p := range c.paths {
			t.Run(c.tool+" "+p, func(t *testing.T) {
				// A failure of the confinement must not damage the machine
				// running the test: check the resolver before any call.
				if _, err := e.ws.Resolve(p); err == nil {
					t.Fatalf("Resolve(%q) accepted a path outside the workspace; not calling %s", p, c.tool)
				}
				res := e.call(c.tool, c.args(p))
				if !res.IsError {
					t.Fatalf("%s %q succeeded: %s", c.tool, p, res.Output)
				}
				if !strings.Contains(res.Output, "outside the workspace "+e.root) {
					t.Errorf("%s %q: message does not say the path is outside the workspace: %s", c.tool, p, res.Output)
				}
				if strings.Contains(res.Output, secret) || strings.Contains(res.Output, "root:") {
					t.Errorf("%s %q leaked outside content: %s", c.tool, p, res.Output)
				}
			})
		}
	}
	if after := tree(t, base); !reflect.DeepEqual(withoutWorkspace(before, e.root), withoutWorkspace(after, e.root)) {
		t.Errorf("files outside the workspace changed:\nbefore %v\nafter  %v", before, after)
	}
	if after := tree(t, e.root); !reflect.DeepEqual(after, subtree(before, e.root)) {
		t.Errorf("workspace changed:\nbefore %v\nafter  %v", subtree(before, e.root), after)
	}
	if len(e.reported) != 0 || len(e.ws.Changes()) != 0 {
		t.Errorf("refused calls reported modifications: %v %v", e.reported, e.ws.Changes())
	}
}

func withoutWorkspace(m map[string]string, root string) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		if k != root && !strings.HasPrefix(k, root+string(filepath.Separator)) {
			out[k] = v
		}
	}
	return out
}

func subtree(m map[string]string, root string) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		if k == root || strings.HasPrefix(k, root+string(filepath.Separator)) {
			out[k] = v
		}
	}
	return out
}

// A workspace file hard-linked to one outside: writing or editing it
// changes the workspace's copy only.
func TestHardLinksDoNotLeadOut(t *testing.T) {
	e := newEnv(t)
	outside := filepath.Join(filepath.Dir(e.root), "outside.txt")
	if err := os.WriteFile(outside, []byte("keep me\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, step := range []struct {
		name string
		args map[string]any
	}{
		{"write_file", map[string]any{"path": "linked.txt", "content": "changed\n"}},
		{"edit_file", map[string]any{"path": "linked.txt", "old_text": "keep me", "new_text": "edited"}},
	} {
		os.Remove(filepath.Join(e.root, "linked.txt"))
		if err := os.Link(outside, filepath.Join(e.root, "linked.txt")); err != nil {
			t.Skipf("no hard links here: %v", err)
		}
		if r := e.call(step.name, step.args); r.IsError {
			t.Fatalf("%s: %s", step.name, r.Output)
		}
		if b, _ := os.ReadFile(outside); string(b) != "keep me\n" {
			t.Fatalf("%s changed the file outside the workspace through a hard link: %q", step.name, b)
		}
		if b, _ := os.ReadFile(filepath.Join(e.root, "linked.txt")); string(b) == "keep me\n" {
			t.Fatalf("%s did not change the workspace's file", step.name)
		}
	}
}

// A directory swapped for a symlink to outside while the tools run — the
// race between checking a path and using it — never lets a write or a
// read through: every open goes through the workspace's os.Root, which
// the kernel holds beneath the root whatever the path became.
func TestSymlinkSwappedBetweenCheckAndUse(t *testing.T) {
	e := newEnv(t)
	outside := filepath.Join(filepath.Dir(e.root), "outside")
	if err := os.MkdirAll(outside, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, "f.txt"), []byte("SECRET\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	d := filepath.Join(e.root, "d")
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { // swap d between a directory and a symlink out, as fast as it can
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			os.RemoveAll(d)
			if i%2 == 0 {
				os.Mkdir(d, 0o755)
			} else {
				os.Symlink(outside, d)
			}
		}
	}()
	for i := range 300 {
		e.call("write_file", map[string]any{"path": "d/f.txt", "content": "written\n"})
		if r := e.call("read_file", map[string]any{"path": "d/f.txt"}); strings.Contains(r.Output, "SECRET") {
			close(stop)
			<-done
			t.Fatalf("round %d: read the file outside through the swapped symlink", i)
		}
		e.call("edit_file", map[string]any{"path": "d/f.txt", "old_text": "SECRET", "new_text": "edited"})
		e.call("delete_file", map[string]any{"path": "d/f.txt"})
	}
	close(stop)
	<-done
	if b, err := os.ReadFile(filepath.Join(outside, "f.txt")); err != nil || string(b) != "SECRET\n" {
		t.Fatalf("the file outside was changed or removed: %q %v", b, err)
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 1 {
		t.Fatalf("something was written outside: %v", entries)
	}
}
