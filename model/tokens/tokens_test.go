package tokens

import (
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	tiktoken "github.com/pkoukk/tiktoken-go"

	"github.com/agentloop/agentloop/model"
)

// Split patterns and special tokens of OpenAI's tiktoken, for the oracle.
const (
	cl100kPattern = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	o200kPattern  = `[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?` +
		`|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?` +
		`|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`
)

var oracles sync.Map // Encoding → *tiktoken.Tiktoken

// oracle is tiktoken-go's regexp2-based encoder built from the same
// embedded ranks: the reference the hand-written pre-tokenizers must match.
func oracle(t testing.TB, enc Encoding) *tiktoken.Tiktoken {
	if o, ok := oracles.Load(enc); ok {
		return o.(*tiktoken.Tiktoken)
	}
	pattern := map[Encoding]string{CL100K: cl100kPattern, O200K: o200kPattern}[enc]
	bpe, err := tiktoken.NewCoreBPE(encoder(enc).ranks, map[string]int{"<|endoftext|>": 1 << 30}, pattern)
	if err != nil {
		t.Fatal(err)
	}
	o := tiktoken.NewTiktoken(bpe, &tiktoken.Encoding{Name: string(enc)}, nil)
	oracles.Store(enc, o)
	return o
}

func TestKnownEncodings(t *testing.T) {
	tests := []struct {
		enc  Encoding
		text string
		ids  []int
	}{
		// Reference ids from OpenAI's tiktoken.
		{CL100K, "hello world", []int{15339, 1917}},
		{CL100K, "tiktoken is great!", []int{83, 1609, 5963, 374, 2294, 0}},
		{O200K, "hello world", []int{24912, 2375}},
	}
	for _, tt := range tests {
		t.Run(string(tt.enc)+"/"+tt.text, func(t *testing.T) {
			if got := oracle(t, tt.enc).EncodeOrdinary(tt.text); !slices.Equal(got, tt.ids) {
				t.Errorf("oracle EncodeOrdinary(%q) = %v, want %v", tt.text, got, tt.ids)
			}
			if n := Count(tt.enc, tt.text); n != len(tt.ids) {
				t.Errorf("Count(%q) = %d, want %d", tt.text, n, len(tt.ids))
			}
		})
	}
}

func TestCount(t *testing.T) {
	tests := []struct {
		name string
		enc  Encoding
		text string
		want int
	}{
		{"empty", CL100K, "", 0},
		{"unknown encoding falls back to cl100k", Encoding("nope"), "hello world", 2},
		// Special tokens are ordinary text, never a panic.
		{"special token text", CL100K, "<|endoftext|>", 7},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Count(tt.enc, tt.text); got != tt.want {
				t.Errorf("Count(%q, %q) = %d, want %d", tt.enc, tt.text, got, tt.want)
			}
		})
	}
}

func TestForModel(t *testing.T) {
	tests := []struct {
		model string
		want  Encoding
	}{
		{"gpt-4o", O200K},
		{"gpt-4o-mini-2024-07-18", O200K},
		{"chatgpt-4o-latest", O200K},
		{"gpt-4.1-mini", O200K},
		{"openai/gpt-4.1", O200K},
		{"openrouter/openai/gpt-5-mini", O200K},
		{"GPT-5", O200K},
		{"o1", O200K},
		{"o3-mini", O200K},
		{"o4-mini-2025-04-16", O200K},
		{"ollama/gpt-oss:20b", O200K},
		{"gpt-4", CL100K},
		{"gpt-4-turbo", CL100K},
		{"gpt-3.5-turbo", CL100K},
		{"claude-sonnet-4-5", CL100K},
		{"ollama/qwen3:8b", CL100K},
		{"omni-model", CL100K},
		{"", CL100K},
	}
	for _, tt := range tests {
		if got := ForModel(tt.model); got != tt.want {
			t.Errorf("ForModel(%q) = %q, want %q", tt.model, got, tt.want)
		}
	}
}

// randomText mixes words in several scripts and cases, contractions,
// digits, punctuation, runs of spaces and newlines, combining marks and
// emoji, so every branch of the pre-tokenizers is exercised.
func randomText(r *rand.Rand, n int) string {
	parts := []string{"the", "Agent", "loop", "HTTPServer", "camelCase", "éclair", "日本語", "κόσμος", "Привет",
		"12", "3456789", "don't", "I'LL", "'Re", "'s", "we've", " ", " ", " ", "  ", "   ", "\n", "\n\n", " \n ", "\t",
		"\r\n", ".", ",", "()", "{\"a\":1}", "//", "/", ".\n/", "->", "ß", "x", "🙂", "e\u0301", "\u0301", "ǅ", "ʰ",
		"\u00a0", "\u3000", "٣", "Ⅻ", "_", "'", "$"}
	var b strings.Builder
	for b.Len() < n {
		b.WriteString(parts[r.IntN(len(parts))])
	}
	return b.String()
}

// TestMatchesTiktoken compares Count with tiktoken-go on varied text.
func TestMatchesTiktoken(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, enc := range []Encoding{CL100K, O200K} {
		o := oracle(t, enc)
		for i := range 300 {
			text := randomText(r, 1+r.IntN(400))
			if got, want := Count(enc, text), len(o.EncodeOrdinary(text)); got != want {
				t.Fatalf("%s text %d: Count = %d, tiktoken-go = %d\n%q", enc, i, got, want, text)
			}
		}
	}
}

func FuzzMatchesTiktoken(f *testing.F) {
	for _, s := range []string{"hello world", "a1b2 c3  d\n\ne", "日本 語12ab", "x  y\t\tz 1234567 w",
		"don't STOP'S", "HTTPServer  \n\t", ".\n/ ,; '", "e\u0301\u0301A"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		if !utf8.ValidString(text) || len(text) > 4096 {
			t.Skip() // tiktoken-go replaces invalid bytes
		}
		for _, enc := range []Encoding{CL100K, O200K} {
			if got, want := Count(enc, text), len(oracle(t, enc).EncodeOrdinary(text)); got != want {
				t.Fatalf("%s: Count = %d, tiktoken-go = %d for %q", enc, got, want, text)
			}
		}
	})
}

// TestMergeLarge checks the heap merge against the quadratic one on long
// pieces built from fragments that merge in many orders.
func TestMergeLarge(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	frags := []string{"a", "b", "ab", "the", "ing", "  ", "e", "é", "🙂", "0", "//", "x"}
	for _, enc := range []Encoding{CL100K, O200K} {
		e := encoder(enc)
		for i := range 200 {
			var b strings.Builder
			for b.Len() < 1+r.IntN(3000) {
				b.WriteString(frags[r.IntN(len(frags))])
			}
			p := b.String()
			if got, want := e.mergeLarge(p), e.merge(p); got != want {
				t.Fatalf("%s piece %d (%d bytes): mergeLarge = %d, merge = %d", enc, i, len(p), got, want)
			}
		}
	}
}

func TestLongPieces(t *testing.T) {
	// Long single pieces are exact up to maxPiece.
	for _, text := range []string{strings.Repeat("a", 700), strings.Repeat(" ", 500), strings.Repeat("日本語", 60),
		strings.Repeat("x", 100) + strings.Repeat("y", 200)} {
		for _, enc := range []Encoding{CL100K, O200K} {
			if got, want := Count(enc, text), len(oracle(t, enc).EncodeOrdinary(text)); got != want {
				t.Errorf("%s: Count(%d-byte piece %q…) = %d, tiktoken-go = %d", enc, len(text), text[:3], got, want)
			}
		}
	}
	// A megabyte of one letter is one piece, counted in maxPiece parts.
	text := strings.Repeat("a", 1<<20)
	if n := Count(CL100K, text); n <= 0 || n > len(text)/2 {
		t.Errorf("Count of 1 MB of letters = %d", n)
	}
}

func TestCountMessages(t *testing.T) {
	enc := CL100K
	user := []model.Message{{Role: model.RoleUser, Content: "hello world"}}
	// Cookbook arithmetic: 3 (reply) + 3 (message) + 1 ("user") + 2.
	if got := CountMessages(enc, user, nil); got != 9 {
		t.Errorf("CountMessages(one user message) = %d, want 9", got)
	}
	params := json.RawMessage(`{
		"type": "object",
		"properties": {"path": {"type": "string"}}
	}`)
	tool := model.ToolSpec{Name: "read_file", Description: "Read a file.", Parameters: params}
	withTool := CountMessages(enc, user, []model.ToolSpec{tool})
	wantTool := 9 + perToolList + perTool + Count(enc, "read_file") + Count(enc, "Read a file.") +
		Count(enc, `{"type":"object","properties":{"path":{"type":"string"}}}`)
	if withTool != wantTool {
		t.Errorf("CountMessages with a tool = %d, want %d (schema whitespace must not count)", withTool, wantTool)
	}
	conv := append(user, model.Message{
		Role:      model.RoleAssistant,
		ToolCalls: []model.ToolCall{{ID: "c1", Name: "read_file", Arguments: json.RawMessage(`{"path": "a.go"}`)}},
	}, model.Message{Role: model.RoleTool, ToolCallID: "c1", Content: "package a"})
	if got := CountMessages(enc, conv, nil); got <= 9+2*perMessage {
		t.Errorf("CountMessages(conversation) = %d, want more than %d", got, 9+2*perMessage)
	}
}

func TestEstimate(t *testing.T) {
	req := &model.Request{
		Model:    "gpt-4o",
		Messages: []model.Message{{Role: model.RoleUser, Content: "hello world"}},
	}
	resp := &model.Response{
		Text:      "hello world",
		ToolCalls: []model.ToolCall{{Name: "read_file", Arguments: json.RawMessage(`{"path":"a"}`)}},
	}
	u := Estimate(req, resp)
	if u.InputTokens != CountMessages(O200K, req.Messages, nil) {
		t.Errorf("InputTokens = %d, want %d", u.InputTokens, CountMessages(O200K, req.Messages, nil))
	}
	wantOut := 2 + perToolCall + Count(O200K, "read_file") + Count(O200K, `{"path":"a"}`)
	if u.OutputTokens != wantOut {
		t.Errorf("OutputTokens = %d, want %d", u.OutputTokens, wantOut)
	}
	if got := Estimate(nil, nil); got != (model.Usage{}) {
		t.Errorf("Estimate(nil, nil) = %+v, want zero", got)
	}
}

func TestConcurrentCount(t *testing.T) {
	var wg sync.WaitGroup
	want := Count(CL100K, "the quick brown fox")
	for i := range 16 {
		enc := CL100K
		if i%2 == 1 {
			enc = O200K
		}
		wg.Go(func() {
			for range 50 {
				n := Count(enc, "the quick brown fox")
				if enc == CL100K && n != want {
					t.Errorf("concurrent Count = %d, want %d", n, want)
				}
			}
		})
	}
	wg.Wait()
}

type failTransport struct {
	mu   sync.Mutex
	urls []string
}

func (f *failTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	f.mu.Lock()
	f.urls = append(f.urls, r.URL.String())
	f.mu.Unlock()
	return nil, http.ErrHandlerTimeout
}

// TestLoadIsOffline builds both encoders from scratch with HTTP disabled and
// an empty tiktoken cache, and checks that no request was attempted and no
// cache file was written.
func TestLoadIsOffline(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("TIKTOKEN_CACHE_DIR", cache)
	t.Setenv("HTTPS_PROXY", "http://127.0.0.1:1")
	ft := &failTransport{}
	saved := http.DefaultTransport
	http.DefaultTransport = ft
	t.Cleanup(func() { http.DefaultTransport = saved })

	for _, enc := range []Encoding{CL100K, O200K} {
		e, err := load(enc)
		if err != nil {
			t.Fatalf("load(%s): %v", enc, err)
		}
		if n := e.count("offline counting works"); n == 0 {
			t.Fatalf("%s: zero tokens", enc)
		}
	}
	if len(ft.urls) > 0 {
		t.Errorf("HTTP requests attempted: %v", ft.urls)
	}
	entries, _ := os.ReadDir(cache)
	if len(entries) > 0 {
		t.Errorf("tiktoken cache written: %s", filepath.Join(cache, entries[0].Name()))
	}
	if _, err := load("p50k_base"); err == nil {
		t.Error("load(p50k_base) succeeded, want an error naming the encoding")
	}
}

var sink int

// benchText is 16 KB of English, Go code and JSON, like a conversation.
func benchText() string {
	sample := "The agent reads internal/loop/runner.go, then runs `go test ./...`; 3 tests fail.\n" +
		"func (r *Runner) Step(ctx context.Context) (State, error) {\n\tif err := r.check(ctx); err != nil {\n" +
		"\t\treturn State{}, fmt.Errorf(\"step %d: %w\", r.n, err)\n\t}\n}\n" +
		`{"name": "edit_file", "arguments": {"path": "loop/runner.go", "old_text": "r.n++", "new_text": "r.n += 1"}}` + "\n"
	return strings.Repeat(sample, 16<<10/len(sample)+1)[:16<<10]
}

func BenchmarkCount(b *testing.B) {
	text := benchText()
	for _, enc := range []Encoding{CL100K, O200K} {
		Count(enc, "warm up")
		b.Run(string(enc), func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			for b.Loop() {
				sink = Count(enc, text)
			}
		})
		b.Run(string(enc)+"/tiktoken-go", func(b *testing.B) {
			o := oracle(b, enc)
			b.SetBytes(int64(len(text)))
			for b.Loop() {
				sink = len(o.EncodeOrdinary(text))
			}
		})
	}
}
