package config

import (
	"os"
	"testing"
)

func FuzzParse(f *testing.F) {
	if data, err := os.ReadFile("example.yaml"); err == nil {
		f.Add(string(data))
	}
	for _, s := range []string{
		"",
		"profiles:\n  p:\n    limits: {max_iterations: 3}\n",
		"x-a: &a {model: ollama/x}\nprofiles:\n  p:\n    <<: *a\n",
		"profiles:\n  p:\n    mcp_servers:\n      s: {command: x, url: y}\n",
		"a: &x [*x]\n",
		"profiles:\n\tp: {}\n",
		"x-1: &a {a: 1}\nx-2: &b {<<: [*a, *a]}\nx-3: &c {<<: [*b, *b]}\nprofiles: {p: {<<: [*c, *c]}}\n",
	} {
		f.Add(s)
	}
	known := []string{"read_file", "write_file"}
	f.Fuzz(func(t *testing.T, text string) {
		c, problems := Parse("fuzz.yaml", []byte(text), known)
		if (c == nil) == (len(problems) == 0) {
			t.Fatalf("config %v with %d problems", c != nil, len(problems))
		}
		for _, p := range problems {
			if p.File != "fuzz.yaml" || p.Message == "" || p.Line < 0 || p.Column < 0 {
				t.Fatalf("bad problem %+v", p)
			}
		}
	})
}
