package fs

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	iofs "io/fs"
	"path"
	"regexp"
	"strings"

	"github.com/agentloop/agentloop/model"
	"github.com/agentloop/agentloop/tool"
	"github.com/agentloop/agentloop/tool/workspace"
)

// Limits of search.
const (
	DefaultSearchResults = 100
	MaxSearchResults     = 1000
	MaxSearchFileBytes   = 4 << 20 // larger files are skipped
	MaxSearchLineBytes   = 300     // bytes shown of a matching line
)

type searchArgs struct {
	Pattern    string `json:"pattern"`
	Path       string `json:"path"`
	Glob       string `json:"glob"`
	MaxResults int    `json:"max_results"`
}

// Search returns the search tool: a regular-expression search over files.
func Search(ws *workspace.Workspace) tool.Tool {
	return &fsTool{
		spec: model.ToolSpec{
			Name: "search",
			Description: "Search file contents in the workspace with a regular expression (Go RE2 syntax: no lookaround or " +
				"backreferences; (?i) makes it case-insensitive). Prints one line per match as path:line: text, paths " +
				"relative to the workspace root. Binary files, files over 4 MiB, symlinks and .git are skipped, and " +
				"node_modules, __pycache__ and .venv unless you search inside them.",
			Parameters: json.RawMessage(fmt.Sprintf(`{
  "type": "object",
  "properties": {
    "pattern": {"type": "string", "minLength": 1, "description": "Regular expression matched against each line, e.g. func \\w+Handler"},
    "path": {"type": "string", "description": "File or directory to search, relative to the workspace root (default: the root)"},
    "glob": {"type": "string", "description": "Only search files whose name matches, e.g. *.go; a glob containing / matches the path below the searched directory, e.g. cmd/*/*.go"},
    "max_results": {"type": "integer", "minimum": 1, "maximum": %d, "description": "Most matches to return (default %d)"}
  },
  "required": ["pattern"],
  "additionalProperties": false
}`, MaxSearchResults, DefaultSearchResults)),
		},
		effect:     tool.EffectRead,
		idempotent: true,
		run: func(ctx context.Context, raw json.RawMessage) (tool.Result, error) {
			a, err := decode[searchArgs]("search", raw)
			if err != nil {
				return tool.Result{}, err
			}
			return search(ctx, ws, a)
		},
	}
}

func search(ctx context.Context, ws *workspace.Workspace, a searchArgs) (tool.Result, error) {
	re, err := regexp.Compile(a.Pattern)
	if err != nil {
		return tool.Result{}, fmt.Errorf("pattern %q is not a valid regular expression: %v; the syntax is Go RE2 (no lookaround or backreferences), and characters like ( [ { . * + ? must be escaped with \\ to match literally",
			a.Pattern, err)
	}
	if a.Glob != "" {
		if _, err := path.Match(a.Glob, ""); err != nil {
			return tool.Result{}, fmt.Errorf("glob %q is not a valid pattern (%v); use patterns like *.go or src/*.ts", a.Glob, err)
		}
	}
	limit := a.MaxResults
	if limit <= 0 {
		limit = DefaultSearchResults
	}
	limit = min(limit, MaxSearchResults)

	t, err := resolve(ws, a.Path)
	if err != nil {
		return tool.Result{}, err
	}
	root, err := ws.OpenRoot()
	if err != nil {
		return tool.Result{}, err
	}
	defer root.Close()
	if _, err := root.Stat(t.rel); err != nil {
		return tool.Result{}, describe(t, err)
	}

	s := searcher{ctx: ctx, fsys: root.FS(), re: re, glob: a.Glob, base: t.rel, limit: limit}
	if err := iofs.WalkDir(s.fsys, t.rel, s.visit); err != nil {
		return tool.Result{}, err
	}

	out := &s.out
	if s.matches == 0 {
		fmt.Fprintf(out, "no matches for %q in %s", a.Pattern, t.rel)
		if a.Glob != "" {
			fmt.Fprintf(out, " (files matching %s)", a.Glob)
		}
		out.WriteString("\n")
	}
	if s.full {
		fmt.Fprintf(out, "[truncated: showing the first %d matches; narrow the pattern, path or glob, or raise max_results (at most %d)]\n", limit, MaxSearchResults)
	}
	var skipped []string
	if s.binary > 0 {
		skipped = append(skipped, plural(s.binary, "binary file"))
	}
	if s.large > 0 {
		skipped = append(skipped, plural(s.large, "file")+" over 4 MiB")
	}
	if s.unreadable > 0 {
		skipped = append(skipped, plural(s.unreadable, "unreadable file"))
	}
	if len(skipped) > 0 {
		fmt.Fprintf(out, "(skipped %s)\n", strings.Join(skipped, ", "))
	}
	return tool.Result{Output: out.String()}, nil
}

type searcher struct {
	ctx   context.Context
	fsys  iofs.FS
	re    *regexp.Regexp
	glob  string
	base  string // the searched path
	limit int

	out                       strings.Builder
	matches                   int
	full                      bool
	binary, large, unreadable int
}

func (s *searcher) visit(p string, d iofs.DirEntry, err error) error {
	if err := s.ctx.Err(); err != nil {
		return err
	}
	if err != nil {
		if p == s.base {
			return fmt.Errorf("cannot search %s: %v", p, err)
		}
		s.unreadable++
		if d != nil && d.IsDir() {
			return iofs.SkipDir
		}
		return nil
	}
	if d.IsDir() {
		if p != s.base && (workspace.IsVCSDir(d.Name()) || workspace.IsBulkyDir(d.Name())) {
			return iofs.SkipDir
		}
		return nil
	}
	if !d.Type().IsRegular() || workspace.IsVCSDir(d.Name()) || !s.globMatch(p) {
		return nil
	}
	info, err := d.Info()
	if err != nil {
		s.unreadable++
		return nil
	}
	if info.Size() > MaxSearchFileBytes {
		s.large++
		return nil
	}
	data, err := iofs.ReadFile(s.fsys, p)
	if err != nil {
		s.unreadable++
		return nil
	}
	if workspace.LooksBinary(data) {
		s.binary++
		return nil
	}
	for n, line := range bytes.SplitAfter(data, []byte("\n")) {
		line = bytes.TrimRight(line, "\r\n")
		if !s.re.Match(line) {
			continue
		}
		if s.matches == s.limit {
			s.full = true
			return iofs.SkipAll
		}
		s.matches++
		text := string(line)
		if len(text) > MaxSearchLineBytes {
			text = strings.ToValidUTF8(text[:MaxSearchLineBytes], "") + " …"
		}
		fmt.Fprintf(&s.out, "%s:%d: %s\n", p, n+1, text)
	}
	return nil
}

func (s *searcher) globMatch(p string) bool {
	if s.glob == "" {
		return true
	}
	name := path.Base(p)
	if strings.Contains(s.glob, "/") {
		name = strings.TrimPrefix(p, s.base+"/")
		if s.base == "." {
			name = p
		}
	}
	ok, _ := path.Match(s.glob, name)
	return ok
}
