package assemble

import "testing"

func TestRedactURL(t *testing.T) {
	for in, want := range map[string]string{
		"http://127.0.0.1:11434":                        "http://127.0.0.1:11434",
		"https://u:p@gw.example/v1":                     "https://gw.example/v1",
		"https://gw.example/v1?api_key=S&version=2":     "https://gw.example/v1?version=2",
		"https://gw.example/v1?Key=S":                   "https://gw.example/v1",
		"https://gw.example/v1?token=S&sig=T&region=eu": "https://gw.example/v1?region=eu",
		"https://gw.example/v1?api-version=2024-10-21":  "https://gw.example/v1?api-version=2024-10-21",
	} {
		if got := RedactURL(in); got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", in, got, want)
		}
	}
}
