package service_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/model/scripted"
	"github.com/agentloop/agentloop/service"
	"github.com/agentloop/agentloop/store"
	"github.com/agentloop/agentloop/store/memory"
)

// fakeEngine records what the service hands it; Run fails while down.
type fakeEngine struct {
	mu       sync.Mutex
	down     bool
	runs     []string
	controls []store.ControlKind
}

func (e *fakeEngine) Run(_ context.Context, id string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.down {
		return errors.New("connection refused")
	}
	e.runs = append(e.runs, id)
	return nil
}

func (e *fakeEngine) Control(_ context.Context, _ string, c store.Control) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.controls = append(e.controls, c.Kind)
	return nil
}

// With an engine, the service records sessions and hands them over; a
// session whose workflow did not start is started by a resume, as the
// error says.
func TestEngineStartsAndResumes(t *testing.T) {
	eng := &fakeEngine{down: true}
	// The model is never called here: the engine's workers run sessions.
	svc, err := service.New(service.Config{Store: memory.New(), Engine: eng, Runner: loop.Config{Model: scripted.Replies()}})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	c := service.Local("test")
	_, err = svc.Start(t.Context(), c, loop.Task{ID: "s1", Prompt: "x"})
	if err == nil || !strings.Contains(err.Error(), "recorded but its workflow did not start") || !strings.Contains(err.Error(), "resume it") {
		t.Fatalf("start with the engine down: %v", err)
	}
	if st, err := svc.Get(t.Context(), c, "s1"); err != nil || st.Status != loop.StatusRunning {
		t.Fatalf("the session was not recorded: %v %v", st, err)
	}
	eng.down = false
	if _, err := svc.Resume(t.Context(), c, "s1", "again"); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Pause(t.Context(), c, "s1", "look"); err != nil {
		t.Fatal(err)
	}
	if len(eng.runs) != 1 || eng.runs[0] != "s1" || len(eng.controls) != 2 || eng.controls[0] != store.ControlResume || eng.controls[1] != store.ControlPause {
		t.Fatalf("runs %v, controls %v", eng.runs, eng.controls)
	}
}
