// Package tokens counts tokens offline with OpenAI's BPE encodings
// (cl100k_base, o200k_base). The merge ranks are embedded in the binary (by
// github.com/pkoukk/tiktoken-go-loader), so counting never touches the
// network. For models that use other tokenizers (Claude, Llama, Qwen…) the
// counts are an approximation, good enough for budgets and for providers
// that report no usage.
//
// The pre-tokenizers are hand-written equivalents of tiktoken's split
// regular expressions; the tests hold them to tiktoken-go's regexp-based
// encoder, which is 20-30 times slower and allocates per token.
package tokens

import (
	"fmt"
	"strings"
	"sync"

	loader "github.com/pkoukk/tiktoken-go-loader"
)

// Encoding names a BPE encoding.
type Encoding string

const (
	// CL100K is used by gpt-4, gpt-3.5-turbo and the embedding models; it is
	// the approximation for every model not known to use O200K.
	CL100K Encoding = "cl100k_base"
	// O200K is used by gpt-4o, gpt-4.1, gpt-4.5, gpt-5, gpt-oss and the o-series.
	O200K Encoding = "o200k_base"
)

// Count returns the number of tokens text encodes to. Special-token text such
// as "<|endoftext|>" is counted as ordinary text. An unknown encoding counts
// with CL100K.
func Count(enc Encoding, text string) int {
	if text == "" {
		return 0
	}
	return encoder(enc).count(text)
}

// ForModel returns the encoding to count a model's tokens with. Provider
// prefixes ("openai/gpt-4o", "openrouter/openai/gpt-4.1") and Ollama tags
// ("gpt-oss:20b") are understood. Models outside the GPT-4o generation get
// CL100K as an approximation.
func ForModel(modelName string) Encoding {
	name := strings.ToLower(strings.TrimSpace(modelName))
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		name = name[i+1:]
	}
	for _, p := range []string{"gpt-4o", "chatgpt-4o", "gpt-4.1", "gpt-4.5", "gpt-5", "gpt-oss"} {
		if strings.HasPrefix(name, p) {
			return O200K
		}
	}
	// o1, o3, o4-mini, o3-pro…
	if len(name) >= 2 && name[0] == 'o' && name[1] >= '1' && name[1] <= '9' {
		return O200K
	}
	return CL100K
}

// Encoders are built once per encoding on first use (decoding the o200k
// ranks takes a few hundred milliseconds) and are safe for concurrent use.
var (
	cl100kOnce, o200kOnce sync.Once
	cl100k, o200k         *bpe
)

func encoder(enc Encoding) *bpe {
	if enc == O200K {
		o200kOnce.Do(func() { o200k = mustLoad(O200K) })
		return o200k
	}
	cl100kOnce.Do(func() { cl100k = mustLoad(CL100K) })
	return cl100k
}

// load builds an encoder from the merge ranks embedded by
// github.com/pkoukk/tiktoken-go-loader. Nothing here can reach the network.
func load(enc Encoding) (*bpe, error) {
	var file string
	var piece func(string, int) int
	switch enc {
	case CL100K:
		file, piece = "cl100k_base.tiktoken", pieceCL100K
	case O200K:
		file, piece = "o200k_base.tiktoken", pieceO200K
	default:
		return nil, fmt.Errorf("tokens: unknown encoding %q (want %q or %q)", enc, CL100K, O200K)
	}
	ranks, err := loader.NewOfflineLoader().LoadTiktokenBpe(file)
	if err != nil {
		return nil, fmt.Errorf("tokens: loading embedded %s: %w", file, err)
	}
	return &bpe{ranks: ranks, piece: piece}, nil
}

// mustLoad panics only if the embedded ranks are missing or corrupt, which
// the tests rule out for every build.
func mustLoad(enc Encoding) *bpe {
	e, err := load(enc)
	if err != nil {
		panic(err)
	}
	return e
}
