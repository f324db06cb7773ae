package mcp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/agentloop/agentloop/internal/schemaref"
)

const emptyObjectSchema = `{"type":"object","properties":{}}`

// FixSchema turns an MCP tool's inputSchema into a JSON Schema for an
// arguments object that compiles (as tool.NewRegistry compiles it):
// a missing schema or "type" becomes an object schema, an unknown
// "$schema" dialect is dropped, and a schema that still does not compile
// is reduced to its top-level properties, or else to an empty object
// schema (the server still validates the arguments itself). The note
// says what was changed when it is worth telling; it is empty otherwise.
func FixSchema(in any) (json.RawMessage, string) {
	raw, err := json.Marshal(in)
	if err != nil || in == nil || bytes.Equal(raw, []byte("null")) {
		return json.RawMessage(emptyObjectSchema), ""
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return json.RawMessage(emptyObjectSchema), "the input schema is not a JSON object; it was replaced by an empty object schema"
	}
	switch t := m["type"].(type) {
	case nil:
		m["type"] = "object"
	case string:
		if t != "object" {
			return json.RawMessage(emptyObjectSchema), fmt.Sprintf("the input schema has type %q, not object; it was replaced by an empty object schema", t)
		}
	case []any:
		if !slices.Contains(t, any("object")) {
			return json.RawMessage(emptyObjectSchema), fmt.Sprintf("the input schema has types %v, none of them object; it was replaced by an empty object schema", t)
		}
		m["type"] = "object"
	default:
		return json.RawMessage(emptyObjectSchema), "the input schema's type is not a string; it was replaced by an empty object schema"
	}
	if _, ok := m["properties"]; !ok {
		m["properties"] = map[string]any{}
	}
	if out, err := compiles(m); err == nil {
		return out, ""
	}
	var note string
	if d, ok := m["$schema"]; ok {
		delete(m, "$schema")
		if out, err := compiles(m); err == nil {
			return out, fmt.Sprintf("the input schema's dialect %v is not supported; it was dropped", d)
		}
	}
	_, err = compiles(m)
	note = fmt.Sprintf("the input schema does not compile (%v)", err)
	reduced := map[string]any{"type": "object", "properties": m["properties"]}
	for _, k := range []string{"required", "$defs", "definitions"} {
		if v, ok := m[k]; ok {
			reduced[k] = v
		}
	}
	if out, err := compiles(reduced); err == nil {
		return out, note + "; only its top-level properties are kept"
	}
	return json.RawMessage(emptyObjectSchema), note + "; it was replaced by an empty object schema"
}

func compiles(m map[string]any) (json.RawMessage, error) {
	raw, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(schemaref.Refused("tool schemas"))
	const url = "mcp://tool/schema.json"
	if err := c.AddResource(url, doc); err != nil {
		return nil, err
	}
	if _, err := c.Compile(url); err != nil {
		return nil, err
	}
	return raw, nil
}
