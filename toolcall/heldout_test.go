package toolcall

import (
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"sort"
	"testing"

	"github.com/agentloop/agentloop/model"
)

// heldoutTools are the tools every held-out sample was written against.
var heldoutTools = []model.ToolSpec{
	{Name: "get_weather", Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"},"unit":{"type":"string"}}}`)},
	{Name: "read_file", Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`)},
	{Name: "write_file", Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"},"content":{"type":"string"}}}`)},
	{Name: "search", Parameters: json.RawMessage(`{"type":"object","properties":{"query":{"type":"string"},"limit":{"type":"integer"}}}`)},
	{Name: "run_shell", Parameters: json.RawMessage(`{"type":"object","properties":{"command":{"type":"string"},"timeout":{"type":"integer"}}}`)},
	{Name: "set_flag", Parameters: json.RawMessage(`{"type":"object","properties":{"enabled":{"type":"boolean"},"options":{"type":"object"}}}`)},
}

type heldoutSample struct {
	Family string `json:"family"`
	Note   string `json:"note"`
	Text   string `json:"text"`
	Want   []struct {
		Name      string `json:"name"`
		Arguments any    `json:"arguments"`
	} `json:"want"`
}

// TestHeldOutCorpus parses every sample of testdata/heldout.json (written
// before the parsers were tuned) with the tools offered and no format hint,
// and requires 95% of them to yield exactly the expected calls: same
// count, order, names and arguments. Per-family accuracy is logged.
func TestHeldOutCorpus(t *testing.T) {
	raw, err := os.ReadFile("testdata/heldout.json")
	if err != nil {
		t.Fatal(err)
	}
	var samples []heldoutSample
	if err := json.Unmarshal(raw, &samples); err != nil {
		t.Fatal(err)
	}
	type tally struct{ ok, n int }
	per := map[string]*tally{}
	total := 0
	for i, s := range samples {
		r := Parse(s.Text, Options{Tools: heldoutTools})
		checkInvariants(t, s.Text, Options{Tools: heldoutTools}, r)
		f := per[s.Family]
		if f == nil {
			f = &tally{}
			per[s.Family] = f
		}
		f.n++
		if why := heldoutMismatch(s, r); why != "" {
			t.Logf("sample %d (%s %s): %s\n  text: %q", i, s.Family, s.Note, why, s.Text)
			continue
		}
		f.ok++
		total++
	}
	names := make([]string, 0, len(per))
	for k := range per {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		t.Logf("%-16s %2d/%-2d %5.1f%%", k, per[k].ok, per[k].n, 100*float64(per[k].ok)/float64(per[k].n))
	}
	acc := float64(total) / float64(len(samples))
	t.Logf("overall %d/%d = %.1f%%", total, len(samples), 100*acc)
	if acc < 0.95 {
		t.Errorf("accuracy %.1f%% is below 95%%", 100*acc)
	}
}

// heldoutMismatch says how r differs from the sample's expected calls, or "".
func heldoutMismatch(s heldoutSample, r Result) string {
	if len(r.Calls) != len(s.Want) {
		return fmt.Sprintf("got %d calls (format %s, problem %q), want %d", len(r.Calls), r.Format, r.Problem, len(s.Want))
	}
	for i, w := range s.Want {
		c := r.Calls[i]
		var got any
		if err := json.Unmarshal(c.Arguments, &got); err != nil {
			return fmt.Sprintf("call %d arguments are not JSON: %s", i, c.Arguments)
		}
		want := w.Arguments
		if want == nil {
			want = map[string]any{}
		}
		if c.Name != w.Name || !reflect.DeepEqual(got, want) {
			wb, _ := json.Marshal(want)
			return fmt.Sprintf("call %d = %s %s, want %s %s", i, c.Name, c.Arguments, w.Name, wb)
		}
	}
	return ""
}
