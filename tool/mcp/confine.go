package mcp

import (
	"encoding/json"
	"fmt"
	"strings"
)

// confined checks every path-like argument of a call with confine before
// the call leaves for the server: string values (or lists of strings) under
// keys naming a path, file, directory, source, destination or target, at
// any depth, file:// URIs included. It returns the first refusal.
//
// This is a check of what the model asks for, not a sandbox: a server
// process can still reach whatever its own permissions allow.
func confined(args json.RawMessage, confine func(string) error) error {
	var v any
	if err := json.Unmarshal(args, &v); err != nil {
		return nil // the server refuses what is not JSON
	}
	return walkPaths(v, "", false, confine)
}

func walkPaths(v any, key string, pathKey bool, confine func(string) error) error {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if err := walkPaths(e, k, isPathKey(k), confine); err != nil {
				return err
			}
		}
	case []any:
		for _, e := range x {
			if err := walkPaths(e, key, pathKey, confine); err != nil {
				return err
			}
		}
	case string:
		p := x
		if rest, ok := strings.CutPrefix(p, "file://"); ok {
			p, pathKey = rest, true
		}
		if pathKey && p != "" {
			if err := confine(p); err != nil {
				return fmt.Errorf("argument %q: %w", key, err)
			}
		}
	}
	return nil
}

// isPathKey says whether an argument name holds a path: path, paths,
// file_path, filename, directory, dir, source, destination, target, cwd, root…
func isPathKey(k string) bool {
	k = strings.ToLower(k)
	for _, w := range []string{"path", "file", "dir", "folder", "source", "destination", "target", "cwd", "root"} {
		if strings.Contains(k, w) {
			return true
		}
	}
	return k == "src" || k == "dst" || k == "from" || k == "to"
}
