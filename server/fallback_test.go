package server_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/loop"
)

// A request's fallback_models take over when its model keeps failing:
// the session completes on the fallback and records model.switched.
func TestCreateWithFallbackModels(t *testing.T) {
	a := newAPI(t, false)
	failing := filepath.Join(a.dir, "failing.json")
	if err := os.WriteFile(failing, []byte(`{"steps":[{"error":{"kind":"retryable","status":429,"message":"rate limited for good"}}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	fallback := script(t, a.dir, "hello from the fallback")
	id := a.create("", fmt.Sprintf(`{"task":"say hi","model":%q,"fallback_models":[%q]}`, "script:"+failing, "script:"+fallback))
	a.waitStatus("", id, "completed")
	evs, err := a.st.Load(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	if started := evs[0].Data.(*loop.SessionStarted); len(started.FallbackModels) != 1 || started.FallbackModels[0] != "script:"+fallback {
		t.Fatalf("recorded: %q", started.FallbackModels)
	}
	var switched *loop.ModelSwitched
	for _, e := range evs {
		if s, ok := e.Data.(*loop.ModelSwitched); ok {
			switched = s
		}
	}
	if switched == nil || switched.From != "script:"+failing || switched.To != "script:"+fallback || !strings.Contains(switched.Why, "rate limited for good") {
		t.Fatalf("model.switched: %+v", switched)
	}
	_, out, _ := a.do("GET", "/v1/sessions/"+id, "", "")
	var st struct {
		CurrentModel string `json:"current_model"`
		Answer       string `json:"answer"`
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil || st.CurrentModel != "script:"+fallback || st.Answer != "hello from the fallback" {
		t.Fatalf("state: %+v %v\n%.500s", st, err, out)
	}
}
