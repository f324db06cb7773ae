// Package price turns token usage into US dollars.
//
// A built-in table covers common hosted models (prices as published by the
// providers in late 2025; check them before relying on a budget) and local
// Ollama models (free). Load merges a user's JSON file over it:
//
//	{
//	  "my-finetune":  {"input_per_mtok": 3, "output_per_mtok": 12},
//	  "vllm/*":       {"input_per_mtok": 0, "output_per_mtok": 0},
//	  "gpt-4.1-mini": {"input_per_mtok": 0.4, "output_per_mtok": 1.6, "cache_read_per_mtok": 0.1}
//	}
//
// Prices are USD per million tokens. A key ending in "*" matches every model
// name starting with what precedes it.
//
// Usage convention: model.Usage.InputTokens counts every prompt token,
// cached or not (OpenAI's convention); CacheReadTokens and CacheWriteTokens
// say how many of them were read from or written to the cache. Providers
// that report cache tokens separately (Anthropic) add them to InputTokens.
package price

import (
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"strings"

	"github.com/agentloop/agentloop/model"
)

// Price is what one model costs, in USD per million tokens.
type Price struct {
	InputPerMTok  float64 `json:"input_per_mtok"`
	OutputPerMTok float64 `json:"output_per_mtok"`
	// CacheReadPerMTok prices input tokens read from the prompt cache; zero
	// means cached tokens cost the same as other input.
	CacheReadPerMTok float64 `json:"cache_read_per_mtok,omitempty"`
	// CacheWritePerMTok prices input tokens written to the prompt cache
	// (Anthropic charges extra); zero means the input price.
	CacheWritePerMTok float64 `json:"cache_write_per_mtok,omitempty"`
}

// Table maps model names to prices.
type Table map[string]Price

//go:embed default.json
var defaultJSON []byte

// Default returns a copy of the built-in table.
func Default() Table {
	t, err := parse(defaultJSON, "built-in price table")
	if err != nil {
		panic(err) // covered by tests
	}
	return t
}

// Load reads a JSON price table from path and returns the built-in table
// with the file's entries added or replacing those of the same name.
func Load(path string) (Table, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("price table: %w", err)
	}
	user, err := parse(data, path)
	if err != nil {
		return nil, err
	}
	t := Default()
	maps.Copy(t, user)
	return t, nil
}

// parse decodes and checks a table; name says where it came from.
func parse(data []byte, name string) (Table, error) {
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	var t Table
	if err := dec.Decode(&t); err != nil {
		return nil, fmt.Errorf("price table %s: %s", name, describe(data, err))
	}
	if dec.More() {
		return nil, fmt.Errorf("price table %s: unexpected data after the JSON object", name)
	}
	if t == nil {
		return nil, fmt.Errorf("price table %s: want a JSON object of model name to prices, got null", name)
	}
	for m, p := range t {
		if strings.TrimSpace(m) == "" {
			return nil, fmt.Errorf("price table %s: empty model name", name)
		}
		for _, v := range []float64{p.InputPerMTok, p.OutputPerMTok, p.CacheReadPerMTok, p.CacheWritePerMTok} {
			if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("price table %s: model %q: prices must be zero or more USD per million tokens, got %v", name, m, v)
			}
		}
	}
	return t, nil
}

// describe adds a line number to JSON errors that carry an offset.
func describe(data []byte, err error) string {
	var offset int64 = -1
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		offset = syn.Offset
	case errors.As(err, &typ):
		offset = typ.Offset
	}
	msg := strings.TrimPrefix(err.Error(), "json: ")
	if strings.HasPrefix(msg, "unknown field") {
		msg += " (known: input_per_mtok, output_per_mtok, cache_read_per_mtok, cache_write_per_mtok)"
	}
	if offset < 0 {
		return msg
	}
	line := 1 + strings.Count(string(data[:min(int(offset), len(data))]), "\n")
	return fmt.Sprintf("line %d: %s", line, msg)
}

// Lookup finds the price of a model and returns the table key that matched.
// It tries, in order:
//
//  1. the exact name (case-insensitive): "gpt-4.1-mini";
//  2. the longest key that is a prefix of the name, where a plain key must
//     end at a separator ("gpt-4.1-mini" matches "gpt-4.1-mini-2025-04-14"
//     but "gpt-4.1" does not match "gpt-4.10") and a key ending in "*"
//     matches any continuation ("ollama/*" matches "ollama/qwen3:8b");
//  3. steps 1 and 2 again with each provider prefix removed in turn:
//     "openrouter/openai/gpt-4.1" → "openai/gpt-4.1" → "gpt-4.1".
func (t Table) Lookup(modelName string) (p Price, key string, ok bool) {
	name := strings.ToLower(strings.TrimSpace(modelName))
	for name != "" {
		if p, key, ok = t.match(name); ok {
			return p, key, true
		}
		_, rest, found := strings.Cut(name, "/")
		if !found {
			break
		}
		name = rest
	}
	return Price{}, "", false
}

func (t Table) match(name string) (Price, string, bool) {
	bestLen := -1
	var best string
	for k := range t {
		lk := strings.ToLower(k)
		if lk == name {
			return t[k], k, true
		}
		if !prefixMatch(lk, name) {
			continue
		}
		// Longest key wins; ties (keys differing only in case) go to the
		// smaller key so the result does not depend on map order.
		if l := len(lk); l > bestLen || (l == bestLen && k < best) {
			bestLen, best = l, k
		}
	}
	if bestLen < 0 {
		return Price{}, "", false
	}
	return t[best], best, true
}

func prefixMatch(key, name string) bool {
	if p, wild := strings.CutSuffix(key, "*"); wild {
		return strings.HasPrefix(name, p)
	}
	if len(name) <= len(key) || !strings.HasPrefix(name, key) {
		return false
	}
	return strings.ContainsRune("-:@_/.", rune(name[len(key)])) && !isDigitAfterDot(key, name)
}

// isDigitAfterDot reports a key ending in a digit that the name continues
// with ".digit": "gpt-5" for "gpt-5.1" is another version, not a variant.
func isDigitAfterDot(key, name string) bool {
	last := key[len(key)-1]
	if last < '0' || last > '9' || name[len(key)] != '.' {
		return false
	}
	return len(name) > len(key)+1 && name[len(key)+1] >= '0' && name[len(key)+1] <= '9'
}

// Cost prices u for modelName. known is false when the table has no
// price for the model; the cost is then 0.
func (t Table) Cost(modelName string, u model.Usage) (usd float64, known bool) {
	p, _, ok := t.Lookup(modelName)
	if !ok {
		return 0, false
	}
	return p.Cost(u), true
}

// Cost prices u. Cached input is priced at the cache rates when they are
// set, at the input rate otherwise.
func (p Price) Cost(u model.Usage) float64 {
	read, write := p.CacheReadPerMTok, p.CacheWritePerMTok
	if read == 0 {
		read = p.InputPerMTok
	}
	if write == 0 {
		write = p.InputPerMTok
	}
	uncached := max(u.InputTokens-u.CacheReadTokens-u.CacheWriteTokens, 0)
	return (float64(uncached)*p.InputPerMTok +
		float64(u.CacheReadTokens)*read +
		float64(u.CacheWriteTokens)*write +
		float64(u.OutputTokens)*p.OutputPerMTok) / 1e6
}
