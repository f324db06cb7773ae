// Package memory gives the model a small working memory for one session:
// remember, recall, forget and list_memory over JSON values stored under
// short keys. Every change is a memory.set event in the session log, so
// the memory survives restarts and shows in the session's history; nothing
// is kept outside the log.
package memory

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/model"
	"github.com/agentloop/agentloop/tool"
)

// Limits on what the model may store.
const (
	// MaxKeyLen is the longest key, in bytes; keys use [A-Za-z0-9_.-].
	MaxKeyLen = 64
	// MaxValueBytes caps one value, as compact JSON.
	MaxValueBytes = 16 << 10
	// MaxKeys caps the number of entries in a session's memory.
	MaxKeys = 100
)

// Tools returns remember, recall, forget and list_memory.
func Tools() []tool.Tool {
	return []tool.Tool{Remember(), Recall(), Forget(), List()}
}

const keyDoc = "1 to 64 characters from A-Z, a-z, 0-9, _ . -"

// Remember returns the remember tool.
func Remember() loop.SessionTool {
	return loop.SessionFunc(model.ToolSpec{
		Name: "remember",
		Description: "Store a value in this session's working memory under a key, to keep a fact, a decision or an intermediate result for later steps. " +
			"The value may be any JSON (string, number, object, array). A key holds one value: remembering an existing key replaces its value. " +
			"Keys are " + keyDoc + "; values are at most 16 KiB.",
		Parameters: json.RawMessage(`{
  "type": "object",
  "properties": {
    "key": {"type": "string", "description": "Name for the value: ` + keyDoc + `."},
    "value": {"description": "The value to store: any JSON value except null."}
  },
  "required": ["key", "value"],
  "additionalProperties": false
}`),
	}, remember)
}

// Recall returns the recall tool.
func Recall() loop.SessionTool {
	return loop.SessionFunc(model.ToolSpec{
		Name:        "recall",
		Description: "Read the value stored under a key in this session's working memory. Use list_memory to see which keys exist.",
		Parameters:  keySchema("The key to read."),
	}, recall)
}

// Forget returns the forget tool.
func Forget() loop.SessionTool {
	return loop.SessionFunc(model.ToolSpec{
		Name:        "forget",
		Description: "Remove a key and its value from this session's working memory.",
		Parameters:  keySchema("The key to remove."),
	}, forget)
}

// List returns the list_memory tool.
func List() loop.SessionTool {
	return loop.SessionFunc(model.ToolSpec{
		Name:        "list_memory",
		Description: "List the keys in this session's working memory, with the size and the start of each value.",
		Parameters:  json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`),
	}, list)
}

func keySchema(doc string) json.RawMessage {
	return json.RawMessage(`{
  "type": "object",
  "properties": {"key": {"type": "string", "description": "` + doc + ` ` + keyDoc + `."}},
  "required": ["key"],
  "additionalProperties": false
}`)
}

type keyArgs struct {
	Key   string          `json:"key"`
	Value json.RawMessage `json:"value"`
}

func decode(name string, raw json.RawMessage) (keyArgs, error) {
	var a keyArgs
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = json.RawMessage(`{}`)
	}
	if err := json.Unmarshal(raw, &a); err != nil {
		return a, fmt.Errorf("%s: arguments do not match the schema (%v)", name, err)
	}
	return a, checkKey(name, a.Key)
}

// checkKey says what is wrong with a key, or nil.
func checkKey(name, key string) error {
	if key == "" {
		return fmt.Errorf("%s: key is empty; use %s", name, keyDoc)
	}
	if len(key) > MaxKeyLen {
		return fmt.Errorf("%s: key %q is %d characters long; use %s", name, short(key, 40), len(key), keyDoc)
	}
	for _, c := range key {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-') {
			return fmt.Errorf("%s: key %q has the character %q; use %s", name, key, c, keyDoc)
		}
	}
	return nil
}

func remember(st *loop.State, raw json.RawMessage) (tool.Result, []loop.Payload, error) {
	a, err := decode("remember", raw)
	if err != nil {
		return tool.Result{}, nil, err
	}
	v := bytes.TrimSpace(a.Value)
	if len(v) == 0 || string(v) == "null" {
		return tool.Result{}, nil, fmt.Errorf("remember: value is missing or null; give the value to store, or use forget to remove %q", a.Key)
	}
	value, err := canonical(v)
	if err != nil {
		return tool.Result{}, nil, fmt.Errorf("remember: value is not valid JSON: %v", err)
	}
	if len(value) > MaxValueBytes {
		return tool.Result{}, nil, fmt.Errorf("remember: the value for %q is %d bytes as compact JSON; the limit is %d bytes (%d KiB), so store a summary or split it under several keys", a.Key, len(value), MaxValueBytes, MaxValueBytes>>10)
	}
	old, exists := st.Memory[a.Key]
	switch {
	case exists && bytes.Equal(old, value):
		return tool.Result{Output: fmt.Sprintf("%q already holds this value; nothing changed.", a.Key)}, nil, nil
	case !exists && len(st.Memory) >= MaxKeys:
		return tool.Result{}, nil, fmt.Errorf("remember: memory is full (%d keys); forget keys you no longer need, or replace one", MaxKeys)
	}
	out := fmt.Sprintf("Remembered %q (%s).", a.Key, size(len(value)))
	if exists {
		out = fmt.Sprintf("Replaced the value of %q (was %s: %s; now %s).", a.Key, size(len(old)), short(display(old), 60), size(len(value)))
	}
	return tool.Result{Output: out}, []loop.Payload{&loop.MemorySet{Key: a.Key, Value: value}}, nil
}

func recall(st *loop.State, raw json.RawMessage) (tool.Result, []loop.Payload, error) {
	a, err := decode("recall", raw)
	if err != nil {
		return tool.Result{}, nil, err
	}
	v, ok := st.Memory[a.Key]
	if !ok {
		return tool.Result{}, nil, missing("recall", a.Key, st.Memory)
	}
	return tool.Result{Output: display(v)}, nil, nil
}

func forget(st *loop.State, raw json.RawMessage) (tool.Result, []loop.Payload, error) {
	a, err := decode("forget", raw)
	if err != nil {
		return tool.Result{}, nil, err
	}
	if _, ok := st.Memory[a.Key]; !ok {
		return tool.Result{}, nil, missing("forget", a.Key, st.Memory)
	}
	return tool.Result{Output: fmt.Sprintf("Forgot %q.", a.Key)}, []loop.Payload{&loop.MemorySet{Key: a.Key, Deleted: true}}, nil
}

func list(st *loop.State, raw json.RawMessage) (tool.Result, []loop.Payload, error) {
	keys := sortedKeys(st.Memory)
	if len(keys) == 0 {
		return tool.Result{Output: "Memory is empty."}, nil, nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d of %d keys used:", len(keys), MaxKeys)
	for _, k := range keys {
		v := st.Memory[k]
		fmt.Fprintf(&b, "\n- %s (%s): %s", k, size(len(v)), short(display(v), 80))
	}
	return tool.Result{Output: b.String()}, nil, nil
}

// canonical is a value as the log stores it: compact JSON with <, > and &
// escaped, as encoding/json writes a json.RawMessage. Keeping that form in
// the event makes the runner's state byte for byte the state folded from a
// stored log, so "already holds this value" holds across restarts too.
func canonical(v []byte) (json.RawMessage, error) {
	b, err := json.Marshal(json.RawMessage(v))
	if err != nil {
		return nil, err
	}
	return b, nil
}

// display undoes the HTML escaping of canonical for the model: inside
// strings, \u003c, \u003e and \u0026 become <, > and &. The result is still
// valid JSON.
func display(v json.RawMessage) string {
	if !bytes.Contains(v, []byte(`\u00`)) {
		return string(v)
	}
	var b strings.Builder
	b.Grow(len(v))
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c != '\\' || i+1 >= len(v) {
			b.WriteByte(c)
			continue
		}
		if v[i+1] == 'u' && i+6 <= len(v) {
			switch string(v[i+2 : i+6]) {
			case "003c":
				b.WriteByte('<')
				i += 5
				continue
			case "003e":
				b.WriteByte('>')
				i += 5
				continue
			case "0026":
				b.WriteByte('&')
				i += 5
				continue
			}
		}
		// Any other escape is copied whole, so an escaped backslash
		// followed by "u003c" stays as it was.
		b.WriteByte(c)
		b.WriteByte(v[i+1])
		i++
	}
	return b.String()
}

func missing(name, key string, mem map[string]json.RawMessage) error {
	keys := sortedKeys(mem)
	if len(keys) == 0 {
		return fmt.Errorf("%s: nothing is stored under %q; memory is empty", name, key)
	}
	return fmt.Errorf("%s: nothing is stored under %q; the keys are: %s", name, key, strings.Join(keys, ", "))
}

func sortedKeys(m map[string]json.RawMessage) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func size(n int) string {
	if n < 1024 {
		return fmt.Sprintf("%d bytes", n)
	}
	return fmt.Sprintf("%.1f KiB", float64(n)/1024)
}

// short cuts s to n runes.
func short(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
