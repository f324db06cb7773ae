package config

import (
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// walker reads YAML nodes into values, collecting a Problem for every
// mistake instead of stopping at the first.
type walker struct {
	file     string
	problems []Problem
	merges   int // merge keys expanded, bounded against alias bombs
}

const maxMerges = 10000

func (w *walker) at(n *yaml.Node, format string, args ...any) {
	p := Problem{File: w.file, Message: fmt.Sprintf(format, args...)}
	if n != nil {
		p.Line, p.Column = n.Line, n.Column
	}
	w.problems = append(w.problems, p)
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// syntax turns a parser error into a Problem. The parser names the line
// where the construct it was reading began ("line 1: did not find
// expected key" for a mistake on line 9), so the line reported is the
// first one whose inclusion makes the same error appear.
func (w *walker) syntax(err error, data []byte) {
	msg := err.Error()
	p := Problem{File: w.file, Message: "YAML syntax: " + strings.TrimPrefix(msg, "yaml: ")}
	lines := strings.SplitAfter(string(data), "\n")
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		p.Line, _ = strconv.Atoi(m[1])
		p.Message = "YAML syntax: " + m[2]
		for k := p.Line; k < len(lines); k++ {
			var n yaml.Node
			if e := yaml.Unmarshal([]byte(strings.Join(lines[:k], "")), &n); e != nil {
				if e.Error() == msg {
					p.Line = k
				}
				break
			}
		}
		if p.Line >= 1 && p.Line <= len(lines) && strings.Contains(lines[p.Line-1], "\t") {
			p.Message += " (YAML does not allow tabs for indentation; use spaces)"
		}
	}
	w.problems = append(w.problems, p)
}

func resolve(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool {
	n = resolve(n)
	return n == nil || (n.Kind == yaml.ScalarNode && n.Tag == "!!null")
}

// describe names what a node holds, for "must be X, got Y" messages.
func describe(n *yaml.Node) string {
	n = resolve(n)
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch n.Tag {
		case "!!null":
			return "nothing"
		case "!!bool":
			return n.Value
		case "!!int", "!!float":
			return "the number " + n.Value
		case "!!str":
			return fmt.Sprintf("the text %q", n.Value)
		}
		return fmt.Sprintf("%s %q", n.Tag, n.Value)
	}
	return "something else"
}

type pair struct {
	key, val *yaml.Node
	name     string
}

// pairs returns the entries of a mapping, resolving aliases and "<<" merge
// keys (explicit keys win over merged ones). Duplicate keys are problems.
func (w *walker) pairs(n *yaml.Node, what string) ([]pair, bool) {
	n = resolve(n)
	if n.Kind != yaml.MappingNode {
		w.at(n, "%s must be a mapping (key: value lines), got %s", what, describe(n))
		return nil, false
	}
	var merged, own []pair
	seen := map[string]*yaml.Node{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Tag == "!!merge" {
			merged = append(merged, w.merge(v, what)...)
			continue
		}
		k = resolve(k)
		if k.Kind != yaml.ScalarNode {
			w.at(k, "%s: a key must be a plain name, got %s", what, describe(k))
			continue
		}
		if first, dup := seen[k.Value]; dup {
			w.at(k, "%s: key %q is repeated (first at line %d); keep one", what, k.Value, first.Line)
			continue
		}
		seen[k.Value] = k
		own = append(own, pair{key: k, val: v, name: k.Value})
	}
	var out []pair
	for _, p := range merged {
		if _, overridden := seen[p.name]; !overridden {
			seen[p.name] = p.key
			out = append(out, p)
		}
	}
	return append(out, own...), true
}

func (w *walker) merge(v *yaml.Node, what string) []pair {
	v = resolve(v)
	if w.merges++; w.merges > maxMerges {
		if w.merges == maxMerges+1 {
			w.at(v, "%s: too many merged mappings (more than %d); simplify the << merges", what, maxMerges)
		}
		return nil
	}
	switch v.Kind {
	case yaml.MappingNode:
		ps, _ := w.pairs(v, what)
		return ps
	case yaml.SequenceNode:
		var out []pair
		for _, m := range v.Content {
			out = append(out, w.merge(m, what)...)
		}
		return out
	}
	w.at(v, "%s: << must merge a mapping (an alias like *base), got %s", what, describe(v))
	return nil
}

// object walks a mapping with a fixed set of keys: fn is called for each
// known key with a non-null value; unknown keys are problems with the
// closest known key suggested.
func (w *walker) object(n *yaml.Node, what string, keys []string, fn func(key string, k, v *yaml.Node)) {
	ps, ok := w.pairs(n, what)
	if !ok {
		return
	}
	for _, p := range ps {
		if !contains(keys, p.name) {
			w.unknownKey(p.key, what, keys)
			continue
		}
		if isNull(p.val) {
			continue
		}
		fn(p.name, p.key, resolve(p.val))
	}
}

func (w *walker) unknownKey(k *yaml.Node, what string, keys []string) {
	if hint, ok := knownMistakes[k.Value]; ok {
		w.at(k, "%s: %s", what, hint)
		return
	}
	if s := suggest(k.Value, keys); s != "" {
		w.at(k, "unknown key %q in %s; did you mean %q?", k.Value, what, s)
		return
	}
	w.at(k, "unknown key %q in %s; known keys: %s", k.Value, what, strings.Join(keys, ", "))
}

// knownMistakes explain keys people are likely to write.
var knownMistakes = map[string]string{
	"api_key":  "api_key is not allowed: keep keys out of config files; put the key in an environment variable and name the variable with api_key_env",
	"apikey":   "apikey is not allowed: put the key in an environment variable and name the variable with api_key_env",
	"password": "password is not allowed: put secrets in environment variables",
	"token":    "token is not allowed: put secrets in environment variables (MCP env and headers may refer to them as ${NAME})",
}

func (w *walker) str(n *yaml.Node, what string) (string, bool) {
	if n.Kind != yaml.ScalarNode || n.Tag != "!!str" {
		if n.Kind == yaml.ScalarNode && n.Tag != "!!null" {
			w.at(n, "%s must be text, got %s (put it in quotes)", what, describe(n))
		} else {
			w.at(n, "%s must be text, got %s", what, describe(n))
		}
		return "", false
	}
	return n.Value, true
}

// scalar accepts any scalar as text (command arguments, env values:
// `--port: 8080` or `DEBUG: true` mean the text).
func (w *walker) scalar(n *yaml.Node, what string) (string, bool) {
	n = resolve(n)
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		w.at(n, "%s must be text, got %s", what, describe(n))
		return "", false
	}
	return n.Value, true
}

func (w *walker) integer(n *yaml.Node, what string) (int, bool) {
	if n.Kind != yaml.ScalarNode || n.Tag != "!!int" {
		hint := ""
		if n.Kind == yaml.ScalarNode && n.Tag == "!!str" {
			if _, err := strconv.Atoi(n.Value); err == nil {
				hint = " (remove the quotes)"
			}
		}
		w.at(n, "%s must be a whole number, got %s%s", what, describe(n), hint)
		return 0, false
	}
	var i int64
	if err := n.Decode(&i); err != nil || i > math.MaxInt32 || i < math.MinInt32 {
		w.at(n, "%s: %s is out of range", what, n.Value)
		return 0, false
	}
	return int(i), true
}

// count reads a whole number that is 0 or more, where 0 means no limit.
func (w *walker) count(n *yaml.Node, what string) (int, bool) {
	i, ok := w.integer(n, what)
	if ok && i < 0 {
		w.at(n, "%s cannot be negative (got %d); use 0 for no limit or leave it out", what, i)
		return 0, false
	}
	return i, ok
}

func (w *walker) number(n *yaml.Node, what string) (float64, bool) {
	if n.Kind != yaml.ScalarNode || (n.Tag != "!!int" && n.Tag != "!!float") {
		w.at(n, "%s must be a number, got %s", what, describe(n))
		return 0, false
	}
	var f float64
	if err := n.Decode(&f); err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		w.at(n, "%s must be a finite number, got %s", what, n.Value)
		return 0, false
	}
	if f < 0 {
		w.at(n, "%s cannot be negative (got %s); use 0 for no limit or leave it out", what, n.Value)
		return 0, false
	}
	return f, true
}

func (w *walker) boolean(n *yaml.Node, what string) (bool, bool) {
	if n.Kind != yaml.ScalarNode || n.Tag != "!!bool" {
		w.at(n, "%s must be true or false, got %s", what, describe(n))
		return false, false
	}
	var b bool
	if err := n.Decode(&b); err != nil {
		w.at(n, "%s must be true or false, got %s", what, n.Value)
		return false, false
	}
	return b, true
}

func (w *walker) duration(n *yaml.Node, what string) (time.Duration, bool) {
	if n.Kind == yaml.ScalarNode && n.Tag == "!!int" && n.Value == "0" {
		return 0, true
	}
	if n.Kind == yaml.ScalarNode && (n.Tag == "!!int" || n.Tag == "!!float") {
		w.at(n, "%s %s has no unit; write it like %ss or %sm", what, n.Value, n.Value, n.Value)
		return 0, false
	}
	if n.Kind != yaml.ScalarNode || n.Tag != "!!str" {
		w.at(n, "%s must be a duration like 90s, 5m or 1h30m, got %s", what, describe(n))
		return 0, false
	}
	d, err := time.ParseDuration(strings.TrimSpace(n.Value))
	if err != nil {
		w.at(n, "%s %q is not a duration; write it like 90s, 5m or 1h30m (units: ms, s, m, h)", what, n.Value)
		return 0, false
	}
	if d < 0 {
		w.at(n, "%s cannot be negative (got %s); use 0 for no limit or leave it out", what, n.Value)
		return 0, false
	}
	return d, true
}

// list returns the items of a sequence.
func (w *walker) list(n *yaml.Node, what, example string) ([]*yaml.Node, bool) {
	if n.Kind != yaml.SequenceNode {
		w.at(n, "%s must be a list, like %s; got %s", what, example, describe(n))
		return nil, false
	}
	out := make([]*yaml.Node, len(n.Content))
	for i, c := range n.Content {
		out[i] = resolve(c)
	}
	return out, true
}

// strings reads a list of text items; itemFn reads one item.
func (w *walker) strs(n *yaml.Node, what, example string, item func(*yaml.Node, string) (string, bool)) ([]string, []*yaml.Node, bool) {
	items, ok := w.list(n, what, example)
	if !ok {
		return nil, nil, false
	}
	out := make([]string, 0, len(items))
	nodes := make([]*yaml.Node, 0, len(items))
	all := true
	for i, it := range items {
		s, ok := item(it, fmt.Sprintf("%s[%d]", what, i))
		if !ok {
			all = false
			continue
		}
		out = append(out, s)
		nodes = append(nodes, it)
	}
	return out, nodes, all
}

// strMap reads a mapping of text values.
func (w *walker) strMap(n *yaml.Node, what string) map[string]string {
	ps, ok := w.pairs(n, what)
	if !ok {
		return nil
	}
	out := make(map[string]string, len(ps))
	for _, p := range ps {
		v, ok := w.scalar(p.val, what+"."+p.name)
		if ok {
			out[p.name] = v
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// suggest returns the candidate closest to s, if one is close enough to
// be a likely typo.
func suggest(s string, candidates []string) string {
	norm := func(x string) string {
		return strings.NewReplacer("_", "", "-", "", " ", "").Replace(strings.ToLower(x))
	}
	best, bestD := "", math.MaxInt
	for _, c := range candidates {
		if norm(c) == norm(s) {
			return c
		}
		d := distance(s, c)
		if d < bestD || (d == bestD && c < best) {
			best, bestD = c, d
		}
	}
	limit := max(1, len(s)/3)
	if bestD <= limit {
		return best
	}
	// A prefix of a longer key ("mcp" for "mcp_servers").
	var prefixed []string
	for _, c := range candidates {
		if len(s) >= 3 && strings.HasPrefix(c, s) {
			prefixed = append(prefixed, c)
		}
	}
	if len(prefixed) == 1 {
		return prefixed[0]
	}
	return ""
}

// distance is the optimal string alignment distance: insertions,
// deletions, substitutions and swaps of neighbours each cost 1.
func distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
