package toolcall

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/agentloop/agentloop/model"
)

// toolIndex matches names written by a model against the offered tools.
type toolIndex struct {
	specs   []model.ToolSpec
	exact   map[string]int
	norm    map[string]int // -1 when two tools normalise alike
	schemas map[int]propTypes
}

func newToolIndex(specs []model.ToolSpec) *toolIndex {
	t := &toolIndex{specs: specs}
	if len(specs) == 0 {
		return t
	}
	t.exact = make(map[string]int, len(specs))
	t.norm = make(map[string]int, len(specs))
	for i, s := range specs {
		if _, dup := t.exact[s.Name]; !dup {
			t.exact[s.Name] = i
		}
		n := normName(s.Name)
		if j, dup := t.norm[n]; dup && j != i {
			t.norm[n] = -1
		} else {
			t.norm[n] = i
		}
	}
	return t
}

// normName folds case, treats '-' like '_' and drops a "functions." prefix.
func normName(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	s = strings.TrimPrefix(s, "functions.")
	return strings.ReplaceAll(s, "-", "_")
}

func (t *toolIndex) offered() bool { return len(t.specs) > 0 }

// lookup returns the index of the offered tool name refers to, or -1.
func (t *toolIndex) lookup(name string) int {
	if i, ok := t.exact[name]; ok {
		return i
	}
	if i, ok := t.norm[normName(name)]; ok && i >= 0 {
		return i
	}
	return -1
}

// resolve returns the offered spelling of name. With no tools offered every
// valid name resolves to itself.
func (t *toolIndex) resolve(name string) (string, bool) {
	if !t.offered() {
		return name, true
	}
	i := t.lookup(name)
	if i < 0 {
		return "", false
	}
	return t.specs[i].Name, true
}

// list names the offered tools for a problem message.
func (t *toolIndex) list() string {
	if !t.offered() {
		return "(none)"
	}
	var b strings.Builder
	for i, s := range t.specs {
		if i == 20 {
			b.WriteString(", and " + strconv.Itoa(len(t.specs)-20) + " more")
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.Quote(s.Name))
	}
	return b.String()
}

// example is a tool name to show in a syntax hint.
func (t *toolIndex) example() string {
	if t.offered() {
		return t.specs[0].Name
	}
	return "TOOL_NAME"
}

// types returns the declared JSON Schema types of one argument of a tool
// (nil when unknown), parsing the tool's schema on first use.
func (t *toolIndex) types(tool, arg string) []string {
	i := t.lookup(tool)
	if i < 0 {
		return nil
	}
	return t.props(i)[arg]
}

// props returns the declared properties of offered tool i, parsing its
// schema on first use.
func (t *toolIndex) props(i int) propTypes {
	if t.schemas == nil {
		t.schemas = make(map[int]propTypes)
	}
	pt, ok := t.schemas[i]
	if !ok {
		pt = parseSchema(t.specs[i].Parameters)
		t.schemas[i] = pt
	}
	return pt
}

// byArguments names the tool a call with these arguments (a JSON object)
// must be to, for a call that names none: the one tool offered, or the
// only offered tool whose schema declares every key. It returns "" and
// why (completing "names no tool and …") when there is no single answer.
func (t *toolIndex) byArguments(args []byte) (string, string) {
	switch len(t.specs) {
	case 0:
		return "", "no tools are offered"
	case 1:
		return t.specs[0].Name, ""
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(args, &obj); err != nil {
		return "", "its arguments are not a JSON object"
	}
	found := -1
	for i, s := range t.specs {
		pt := t.props(i)
		fits := true
		for k := range obj {
			if _, ok := pt[k]; !ok {
				fits = false
				break
			}
		}
		if !fits {
			continue
		}
		if found >= 0 {
			return "", "its arguments fit more than one tool (" + strconv.Quote(t.specs[found].Name) + " and " + strconv.Quote(s.Name) + ")"
		}
		found = i
	}
	if found < 0 {
		return "", "its arguments fit none of the available tools (" + t.list() + ")"
	}
	return t.specs[found].Name, ""
}
