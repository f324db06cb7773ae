package shell

import (
	"io/fs"
	"path/filepath"
	"sort"

	"github.com/agentloop/agentloop/tool"
	"github.com/agentloop/agentloop/tool/workspace"
)

// stamp is what a cheap comparison of a file looks at.
type stamp struct {
	size  int64
	mtime int64
	mode  fs.FileMode
}

// listing is the stamps of the files under a root, in walk order, with
// version-control and dependency directories skipped.
type listing struct {
	files    map[string]stamp // slash path relative to the root
	complete bool             // false when the file cap was reached
}

// scan stamps up to limit files under root. Directories themselves are not
// tracked; symlinks are, as links.
func scan(root string, limit int) listing {
	l := listing{files: make(map[string]stamp), complete: true}
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if d != nil && d.IsDir() && p != root {
				return fs.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			if p != root && (workspace.IsVCSDir(d.Name()) || workspace.IsBulkyDir(d.Name())) {
				return fs.SkipDir
			}
			return nil
		}
		if len(l.files) == limit {
			l.complete = false
			return fs.SkipAll
		}
		info, err := d.Info()
		if err != nil {
			return nil // removed while walking
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return nil
		}
		l.files[filepath.ToSlash(rel)] = stamp{size: info.Size(), mtime: info.ModTime().UnixNano(), mode: info.Mode()}
		return nil
	})
	return l
}

// compare lists what changed between two scans, sorted by path. When a scan
// stopped at the file cap, a file missing from it may simply lie beyond the
// cap, so only the certain changes are listed.
func compare(before, after listing) []tool.Modification {
	var out []tool.Modification
	for p, a := range after.files {
		b, ok := before.files[p]
		switch {
		case !ok && before.complete:
			out = append(out, tool.Modification{Path: p, Kind: tool.Created})
		case ok && a != b:
			out = append(out, tool.Modification{Path: p, Kind: tool.Changed})
		}
	}
	if after.complete {
		for p := range before.files {
			if _, ok := after.files[p]; !ok {
				out = append(out, tool.Modification{Path: p, Kind: tool.Deleted})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}
