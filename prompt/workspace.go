package prompt

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"unicode"
)

// WorkspaceInfo describes the directory an agent works in.
type WorkspaceInfo struct {
	Root       string `json:"root,omitempty"`       // absolute path
	Repository string `json:"repository,omitempty"` // "owner/name" from the origin remote, else the repository directory's name
	Branch     string `json:"branch,omitempty"`     // checked-out branch; "" when detached
	Commit     string `json:"commit,omitempty"`     // abbreviated HEAD commit when detached
	// Files are paths named in the task that exist in the workspace,
	// relative to Root with forward slashes; directories end in "/".
	Files []string `json:"files,omitempty"`
}

// maxFiles caps WorkspaceInfo.Files.
const maxFiles = 20

// Workspace describes dir for a task: the git repository it belongs to
// (found by reading .git directly, without running git) and the paths the
// task text mentions that exist under dir. Whatever cannot be found is left
// empty.
func Workspace(dir, task string) WorkspaceInfo {
	root, err := filepath.Abs(dir)
	if err != nil {
		root = filepath.Clean(dir)
	}
	w := WorkspaceInfo{Root: root}
	if top, gitDir, ok := findGitDir(root); ok {
		w.Branch, w.Commit = readHead(gitDir)
		w.Repository = originName(commonDir(gitDir))
		if w.Repository == "" {
			w.Repository = filepath.Base(top)
		}
	}
	w.Files = mentionedFiles(root, task)
	return w
}

// findGitDir walks up from dir to the directory holding .git and returns it
// with the git directory. A .git file ("gitdir: …", used by worktrees and
// submodules) is followed.
func findGitDir(dir string) (top, gitDir string, ok bool) {
	for d := dir; ; d = filepath.Dir(d) {
		p := filepath.Join(d, ".git")
		if info, err := os.Stat(p); err == nil {
			if info.IsDir() {
				return d, p, true
			}
			if b, err := os.ReadFile(p); err == nil {
				if g, found := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir:"); found {
					g = strings.TrimSpace(g)
					if !filepath.IsAbs(g) {
						g = filepath.Join(d, g)
					}
					return d, g, true
				}
			}
		}
		if filepath.Dir(d) == d {
			return "", "", false
		}
	}
}

// readHead returns the branch HEAD points to, or the abbreviated commit
// when HEAD is detached.
func readHead(gitDir string) (branch, commit string) {
	b, err := os.ReadFile(filepath.Join(gitDir, "HEAD"))
	if err != nil {
		return "", ""
	}
	head := strings.TrimSpace(string(b))
	if ref, ok := strings.CutPrefix(head, "ref:"); ok {
		ref = strings.TrimSpace(ref)
		return strings.TrimPrefix(ref, "refs/heads/"), ""
	}
	if len(head) >= 12 && isHex(head) {
		return "", head[:12]
	}
	return "", ""
}

func isHex(s string) bool {
	return strings.IndexFunc(s, func(r rune) bool { return !strings.ContainsRune("0123456789abcdef", r) }) < 0
}

// commonDir is where a worktree's shared files (config) live.
func commonDir(gitDir string) string {
	b, err := os.ReadFile(filepath.Join(gitDir, "commondir"))
	if err != nil {
		return gitDir
	}
	c := strings.TrimSpace(string(b))
	if !filepath.IsAbs(c) {
		c = filepath.Join(gitDir, c)
	}
	return c
}

// originName reads the origin remote's URL from the git config and returns
// the repository's name: "owner/name" for hosted URLs, "name" for paths.
func originName(gitDir string) string {
	f, err := os.Open(filepath.Join(gitDir, "config"))
	if err != nil {
		return ""
	}
	defer f.Close()
	inOrigin := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "[") {
			inOrigin = strings.EqualFold(strings.Join(strings.Fields(line), " "), `[remote "origin"]`)
			continue
		}
		if !inOrigin {
			continue
		}
		key, val, ok := strings.Cut(line, "=")
		if ok && strings.EqualFold(strings.TrimSpace(key), "url") {
			return repoNameFromURL(strings.Trim(strings.TrimSpace(val), `"`))
		}
	}
	return ""
}

var scpLike = regexp.MustCompile(`^[\w.-]+@[\w.-]+:`)

// repoNameFromURL: "https://github.com/o/n.git", "git@github.com:o/n.git",
// "ssh://git@host:22/o/n" → "o/n"; "/srv/git/n.git" → "n".
func repoNameFromURL(u string) string {
	u = strings.TrimSuffix(strings.TrimRight(u, "/"), ".git")
	hosted := strings.Contains(u, "://") || scpLike.MatchString(u)
	if scpLike.MatchString(u) {
		u = u[strings.IndexByte(u, ':')+1:]
	} else if i := strings.Index(u, "://"); i >= 0 {
		u = u[i+3:]
		if j := strings.IndexByte(u, '/'); j >= 0 {
			u = u[j+1:] // drop the host
		} else {
			u = ""
		}
	}
	parts := strings.FieldsFunc(u, func(r rune) bool { return r == '/' || r == '\\' })
	switch {
	case len(parts) == 0:
		return ""
	case hosted && len(parts) >= 2:
		return parts[len(parts)-2] + "/" + parts[len(parts)-1]
	default:
		return parts[len(parts)-1]
	}
}

var lineSuffix = regexp.MustCompile(`(:\d+)+$|#L\d+.*$`)

// mentionedFiles returns the paths in task that exist under root. A word
// counts as a path when it contains "/" or "." (main.go, ./cmd/, a.go:12)
// or names an existing file in root (Makefile).
func mentionedFiles(root, task string) []string {
	var found []string
	words := strings.FieldsFunc(task, func(r rune) bool {
		return unicode.IsSpace(r) || strings.ContainsRune("`\"'()[]{}<>,;|", r)
	})
	checked := 0
	for _, w := range words {
		if len(found) >= maxFiles || checked >= 200 {
			break
		}
		w = strings.TrimRight(w, ".:!?")
		w = lineSuffix.ReplaceAllString(w, "")
		if w == "" || len(w) > 1024 || strings.ContainsAny(w, "*?$~") || strings.Contains(w, "://") ||
			!strings.ContainsFunc(w, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }) {
			continue
		}
		pathLike := strings.ContainsAny(w, "/.")
		rel := w
		if filepath.IsAbs(w) {
			r, err := filepath.Rel(root, w)
			if err != nil {
				continue
			}
			rel = r
		}
		rel = filepath.Clean(filepath.FromSlash(rel))
		if rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			continue
		}
		checked++
		info, err := os.Stat(filepath.Join(root, rel))
		if err != nil || (!pathLike && info.IsDir()) {
			continue
		}
		name := filepath.ToSlash(rel)
		if info.IsDir() {
			name += "/"
		}
		if !slices.Contains(found, name) {
			found = append(found, name)
		}
	}
	return found
}
