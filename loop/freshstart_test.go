package loop_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/model"
	"github.com/agentloop/agentloop/tool"
)

// A session whose ID was just made (Task.FreshID) begins its first model
// call while session.started commits, and Start still returns only once
// the start is durable.
func TestFreshSessionRunsWhileItsStartCommits(t *testing.T) {
	e := newEnv()
	log := &gatedLog{memLog: e.log}
	var calls atomic.Int32
	called := make(chan struct{}, 1)
	m := model.Func(func(ctx context.Context, req *model.Request, _ model.StreamFunc) (*model.Response, error) {
		calls.Add(1)
		select {
		case called <- struct{}{}:
		default:
		}
		return &model.Response{Text: "done"}, nil
	})
	// A tool makes a text reply the answer (without tools a session reasons
	// step by step).
	read := idem{tool.Func(model.ToolSpec{Name: "read_file", Parameters: objSchema}, func(context.Context, json.RawMessage) (tool.Result, error) {
		return tool.Result{Output: "content"}, nil
	})}
	r, err := loop.New(loop.Config{Model: m, Tools: tool.MustRegistry(read), Log: log, Clock: e.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	type started struct {
		sess *loop.Session
		err  error
	}
	out := make(chan started, 1)
	go func() {
		sess, err := r.Start(t.Context(), loop.Task{Prompt: "x", ID: "fresh", FreshID: true})
		out <- started{sess, err}
	}()
	<-called // the model is called while every commit is held
	select {
	case s := <-out:
		t.Fatalf("Start returned (%v) before session.started was durable", s.err)
	default:
	}
	if _, err := e.log.Load(t.Context(), "fresh"); err == nil {
		t.Fatal("the start was stored while the gate held it")
	}
	log.release()
	s := <-out
	if s.err != nil {
		t.Fatal(s.err)
	}
	st, err := s.sess.Wait(t.Context())
	if err != nil || st.Status != loop.StatusCompleted {
		t.Fatalf("%v %v", st.Status, err)
	}
	refold(t, e, st)
}

// brokenLog fails every commit from the first on, as a store whose disk
// went away.
type brokenLog struct{ *memLog }

var errDiskGone = errors.New("disk gone")

func (brokenLog) Append(context.Context, ...loop.Event) error { return errDiskGone }

func (brokenLog) AppendAsync(_ context.Context, _ []loop.Event, done func(error)) {
	go done(errDiskGone)
}

// A fresh session whose start cannot be saved is stopped before Start
// reports the failure: nothing it does outlives the refusal, and a tool
// that must not run twice never runs.
func TestFreshSessionStopsWhenItsStartIsNotSaved(t *testing.T) {
	e := newEnv()
	var mu sync.Mutex
	writes := 0
	write := tool.Func(model.ToolSpec{Name: "write_file", Parameters: objSchema}, func(context.Context, json.RawMessage) (tool.Result, error) {
		mu.Lock()
		writes++
		mu.Unlock()
		return tool.Result{Output: "written"}, nil
	})
	var calls atomic.Int32
	m := model.Func(func(ctx context.Context, req *model.Request, _ model.StreamFunc) (*model.Response, error) {
		calls.Add(1)
		return &model.Response{ToolCalls: []model.ToolCall{{ID: "c1", Name: "write_file", Arguments: json.RawMessage(`{"path":"a"}`)}}}, nil
	})
	r, err := loop.New(loop.Config{Model: m, Tools: tool.MustRegistry(write), Log: brokenLog{e.log}, Clock: e.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.Start(t.Context(), loop.Task{Prompt: "x", ID: "broken", FreshID: true})
	if !errors.Is(err, loop.ErrNotSaved) || !errors.Is(err, errDiskGone) {
		t.Fatalf("Start = %v, want a not-saved error naming the store's", err)
	}
	if _, here := r.Session("broken"); here {
		t.Fatal("the runner still holds a session whose start was not saved")
	}
	// Start waited for the session's goroutine to end: these are final.
	mu.Lock()
	defer mu.Unlock()
	if writes != 0 || calls.Load() > 1 {
		t.Fatalf("after the refusal: %d writes, %d model calls", writes, calls.Load())
	}
}
