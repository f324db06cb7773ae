package price

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/model"
)

func TestDefaultTable(t *testing.T) {
	d := Default()
	for _, name := range []string{"gpt-4.1", "gpt-4.1-mini", "gpt-4o", "gpt-4o-mini", "o4-mini",
		"claude-sonnet-4-5", "claude-haiku-4-5", "claude-opus-4-1", "deepseek-chat", "ollama/*"} {
		if _, ok := d[name]; !ok {
			t.Errorf("default table lacks %q", name)
		}
	}
	for name, p := range d {
		if name != "ollama/*" && (p.InputPerMTok <= 0 || p.OutputPerMTok < p.InputPerMTok) {
			t.Errorf("%s: implausible price %+v", name, p)
		}
	}
	// Default returns a copy.
	d["gpt-4.1"] = Price{}
	if Default()["gpt-4.1"].InputPerMTok == 0 {
		t.Error("changing Default()'s result changed the built-in table")
	}
}

func TestLookup(t *testing.T) {
	table := Default()
	table["vllm/*"] = Price{}
	table["gpt-4"] = Price{InputPerMTok: 30, OutputPerMTok: 60}
	tests := []struct {
		name string
		key  string // "" = not found
	}{
		{"gpt-4.1-mini", "gpt-4.1-mini"},
		{"GPT-4.1-Mini", "gpt-4.1-mini"},
		{"  gpt-4o ", "gpt-4o"},
		{"openai/gpt-4.1-mini", "gpt-4.1-mini"},
		{"openrouter/openai/gpt-4.1", "gpt-4.1"},
		{"anthropic/claude-sonnet-4-5", "claude-sonnet-4-5"},
		{"gpt-4.1-mini-2025-04-14", "gpt-4.1-mini"},
		{"gpt-4.1-2025-04-14", "gpt-4.1"},
		{"openai/gpt-4o-mini-2024-07-18", "gpt-4o-mini"},
		{"claude-sonnet-4-5-20250929", "claude-sonnet-4-5"},
		{"claude-haiku-4-5@20251001", "claude-haiku-4-5"},
		{"o4-mini-2025-04-16", "o4-mini"},
		{"o3-mini", "o3-mini"},
		{"ollama/qwen3:8b", "ollama/*"},
		{"ollama/gpt-oss:20b", "ollama/*"},
		{"vllm/meta-llama/Llama-3.1-8B", "vllm/*"},
		{"gpt-4-turbo", "gpt-4"},
		{"gpt-4.5-preview", ""}, // "gpt-4" + ".5" is another version
		{"gpt-4.10", ""},
		{"gpt-5.1", ""},
		{"gpt-4o2", ""}, // no separator after the key
		{"qwen3:8b", ""},
		{"", ""},
		{"/", ""},
	}
	for _, tt := range tests {
		_, key, ok := table.Lookup(tt.name)
		if key != tt.key || ok != (tt.key != "") {
			t.Errorf("Lookup(%q) = %q, %v; want %q", tt.name, key, ok, tt.key)
		}
	}
}

func TestCost(t *testing.T) {
	table := Table{
		"m":      {InputPerMTok: 2, OutputPerMTok: 8, CacheReadPerMTok: 0.5, CacheWritePerMTok: 2.5},
		"plain":  {InputPerMTok: 1, OutputPerMTok: 4},
		"free/*": {},
	}
	tests := []struct {
		name  string
		model string
		u     model.Usage
		usd   float64
		known bool
	}{
		{"input and output", "m", model.Usage{InputTokens: 1_000_000, OutputTokens: 500_000}, 2 + 4, true},
		{"cache read is part of input", "m", model.Usage{InputTokens: 1_000_000, CacheReadTokens: 800_000}, 0.2*2 + 0.8*0.5, true},
		{"cache write", "m", model.Usage{InputTokens: 1_000_000, CacheWriteTokens: 1_000_000}, 2.5, true},
		{"no cache prices: cached input at input price", "plain", model.Usage{InputTokens: 1000, CacheReadTokens: 1000, OutputTokens: 1000}, 0.001 + 0.004, true},
		{"cache counts above input do not go negative", "m", model.Usage{InputTokens: 10, CacheReadTokens: 1_000_000}, 0.5, true},
		{"free local model", "free/llama3", model.Usage{InputTokens: 5e6, OutputTokens: 5e6}, 0, true},
		{"unknown model", "mystery", model.Usage{InputTokens: 100}, 0, false},
		{"default table, dated variant", "gpt-4.1-mini-2025-04-14", model.Usage{InputTokens: 1_000_000, OutputTokens: 1_000_000}, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tb := table
			want := tt.usd
			if strings.HasPrefix(tt.name, "default") {
				tb = Default()
				p := tb["gpt-4.1-mini"]
				want = p.InputPerMTok + p.OutputPerMTok
			}
			usd, known := tb.Cost(tt.model, tt.u)
			if known != tt.known || math.Abs(usd-want) > 1e-9 {
				t.Errorf("Cost(%q, %+v) = %v, %v; want %v, %v", tt.model, tt.u, usd, known, want, tt.known)
			}
		})
	}
}

func writeTable(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "prices.json")
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestLoadMergesOverDefaults(t *testing.T) {
	path := writeTable(t, `{
  "gpt-4.1-mini": {"input_per_mtok": 0.3, "output_per_mtok": 1.2},
  "my-finetune":  {"input_per_mtok": 3, "output_per_mtok": 12, "cache_read_per_mtok": 1}
}`)
	table, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if p := table["gpt-4.1-mini"]; p.InputPerMTok != 0.3 || p.CacheReadPerMTok != 0 {
		t.Errorf("override gpt-4.1-mini = %+v, want the file's entry replacing the default", p)
	}
	if _, _, ok := table.Lookup("my-finetune-v2"); !ok {
		t.Error("added model my-finetune not found by prefix")
	}
	if _, ok := table["claude-sonnet-4-5"]; !ok {
		t.Error("defaults lost after Load")
	}
}

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name, content string
		want          []string
	}{
		{"syntax error with line", "{\n  \"a\": {\"input_per_mtok\": 1,}\n}", []string{"line 2", "invalid character"}},
		{"wrong type with line", "{\n\n  \"a\": {\"input_per_mtok\": \"cheap\"}\n}", []string{"line 3", "input_per_mtok"}},
		{"unknown field", `{"a": {"input_per_mtoken": 1}}`, []string{`unknown field "input_per_mtoken"`}},
		{"negative price", `{"a": {"input_per_mtok": -1}}`, []string{`model "a"`, "zero or more"}},
		{"empty name", `{"": {}}`, []string{"empty model name"}},
		{"not an object", `[]`, []string{"cannot unmarshal array"}},
		{"null", `null`, []string{"got null"}},
		{"trailing data", `{} {}`, []string{"unexpected data"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeTable(t, tt.content)
			_, err := Load(path)
			if err == nil {
				t.Fatal("Load succeeded, want an error")
			}
			for _, w := range append(tt.want, path) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
	if _, err := Load(filepath.Join(t.TempDir(), "absent.json")); err == nil || !strings.Contains(err.Error(), "absent.json") {
		t.Errorf("Load(missing file) error = %v, want one naming the file", err)
	}
}
