package main

import (
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/agentloop/agentloop/config"
	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/model/provider"
	"github.com/agentloop/agentloop/sandbox"
	"github.com/agentloop/agentloop/tool/mcp"
)

// exampleKeys reads config/example.yaml and returns, for each key (by its
// path, "profiles.coder.limits.timeout"), its value and the comment above
// it as one line of prose.
func exampleKeys(t *testing.T) map[string][2]string {
	t.Helper()
	data, err := os.ReadFile("../../config/example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	out := map[string][2]string{}
	var walk func(n *yaml.Node, path string)
	walk = func(n *yaml.Node, path string) {
		if n.Kind == yaml.DocumentNode {
			for _, c := range n.Content {
				walk(c, path)
			}
			return
		}
		if n.Kind != yaml.MappingNode {
			return
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			p := strings.TrimPrefix(path+"."+k.Value, ".")
			// A commented-out key ("# num_ctx: 32768") belongs to the
			// comment of the key after it: keep it there too.
			out[p] = [2]string{v.Value, prose(k.HeadComment)}
			walk(v, p)
		}
	}
	walk(&doc, "")
	return out
}

// prose is a comment's text on one line, without its "#" marks.
func prose(comment string) string {
	var words []string
	for _, line := range strings.Split(comment, "\n") {
		words = append(words, strings.Fields(strings.TrimPrefix(strings.TrimSpace(line), "#"))...)
	}
	return strings.Join(words, " ")
}

// defaultIn finds "Default: X", "Default X" or "(default X)" in a
// comment.
var defaultIn = regexp.MustCompile(`(?i)default:? ([^\s,;)]*[^\s,;).])`)

// Every default config/example.yaml states is the one the binary uses:
// the flags' defaults, the loop's, the providers', the sandbox's and MCP's.
// A documented default that drifts from the code fails here.
func TestExampleConfigStatesTheRealDefaults(t *testing.T) {
	keys := exampleKeys(t)
	if problems := config.Check("../../config/example.yaml", builtinToolNames()); len(problems) > 0 {
		t.Fatalf("example.yaml has problems: %v", problems)
	}
	var o sessionFlags
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	o.register(fs)
	flagDefault := func(name string) string { return fs.Lookup(name).DefValue }
	errorRepeats, repeats := loop.Limits{}.StuckThresholds()
	lim := sandbox.Policy{}.WithDefaults().Limits
	const limits, coder = "profiles.coder.limits.", "profiles.coder."

	// What each key's comment says its default is, and the code's.
	for _, tc := range []struct {
		key, code string
		// in, when set, finds the default in the comment instead of
		// defaultIn (a comment that states two keys' defaults).
		in *regexp.Regexp
	}{
		{key: limits + "max_iterations", code: strconv.Itoa(loop.DefaultMaxIterations)},
		{key: limits + "timeout", code: flagDefault("timeout")},
		{key: limits + "model_timeout", code: flagDefault("model-timeout")},
		{key: limits + "max_tool_calls_per_turn", code: flagDefault("max-tool-calls-per-turn")},
		{key: limits + "no_progress", code: flagDefault("no-progress")},
		{key: limits + "stuck_error_repeats", code: strconv.Itoa(errorRepeats), in: regexp.MustCompile(`stuck_error_repeats when the result is an error \(default (\d+)\)`)},
		{key: limits + "stuck_error_repeats", code: strconv.Itoa(repeats), in: regexp.MustCompile(`stuck_repeats otherwise \(default (\d+)\)`)},
		{key: coder + "mcp_servers.github.connect_timeout", code: mcp.DefaultConnectTimeout.String()},
		{key: coder + "mcp_servers.github.reconnects", code: "1"}, // tool/mcp: a zero Reconnects is one
	} {
		kv, ok := keys[tc.key]
		if !ok {
			t.Errorf("example.yaml has no %s", tc.key)
			continue
		}
		re := defaultIn
		if tc.in != nil {
			re = tc.in
		}
		m := re.FindStringSubmatch(kv[1])
		if m == nil {
			t.Errorf("%s: its comment states no default: %q", tc.key, kv[1])
			continue
		}
		if !sameValue(m[1], tc.code) {
			t.Errorf("%s: example.yaml says the default is %s, the code's is %s", tc.key, m[1], tc.code)
		}
	}

	// Values the example shows as the defaults themselves.
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_DATA_HOME", "")
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv("AGENTLOOP_DB", "")
	t.Setenv("AGENTLOOP_CONFIG", "")
	rel, err := filepath.Rel(home, defaultDB())
	if err != nil {
		t.Fatal(err)
	}
	if got := keys["db"][0]; got != "~/"+rel || !strings.Contains(keys["db"][1], "~/"+rel) {
		t.Errorf("db: example.yaml shows %q, the binary's default is ~/%s", got, rel)
	}
	for key, code := range map[string]uint64{"cpu_seconds": lim.CPUSeconds, "address_space_mb": lim.AddressSpaceMB, "processes": lim.Processes,
		"file_size_mb": lim.FileSizeMB, "open_files": lim.OpenFiles} {
		if got := keys[coder+"sandbox_limits."+key][0]; got != strconv.FormatUint(code, 10) {
			t.Errorf("sandbox_limits.%s: example.yaml shows %s as the default, the sandbox's is %d", key, got, code)
		}
	}
	// Defaults named in prose: the model, and Ollama's context window
	// (its key is commented out, so its comment is part of the next key's).
	if want := provider.DefaultSpec + " (the default)"; !strings.Contains(keys[coder+"model"][1], want) {
		t.Errorf("model: its comment does not say %q: %q", want, keys[coder+"model"][1])
	}
	if want := "Default " + strconv.Itoa(provider.DefaultOllamaNumCtx); !strings.Contains(keys[coder+"system_prompt_file"][1], want) {
		t.Errorf("num_ctx: example.yaml does not say %q", want)
	}
}

// sameValue compares a default as written (15, 30m, 30s) with the code's
// (15, 30m0s, 30s).
func sameValue(doc, code string) bool {
	if doc == code {
		return true
	}
	a, err1 := time.ParseDuration(doc)
	b, err2 := time.ParseDuration(code)
	return err1 == nil && err2 == nil && a == b
}
