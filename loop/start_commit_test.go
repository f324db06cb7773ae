package loop

import (
	"context"
	"sync"
	"testing"

	"github.com/agentloop/agentloop/model"
)

// heldLog is an AsyncLog that holds every commit until the test lets it go.
type heldLog struct {
	mu      sync.Mutex
	handed  [][]Event
	pending []func(error)
}

func (l *heldLog) Append(context.Context, ...Event) error { return nil }
func (l *heldLog) Load(context.Context, string) ([]Event, error) {
	return nil, ErrNotFound
}
func (l *heldLog) AppendAsync(_ context.Context, events []Event, done func(error)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.handed = append(l.handed, append([]Event(nil), events...))
	l.pending = append(l.pending, done)
}

// A start its caller hands over (Start with a fresh ID) is never taken by
// the late handover first: the caller's watch must see the commit that
// holds session.started, not an empty buffer that reports at once.
func TestAHandedOverStartWaitsForItsCaller(t *testing.T) {
	log := &heldLog{}
	r, err := New(Config{Model: model.Func(func(context.Context, *model.Request, model.StreamFunc) (*model.Response, error) {
		return &model.Response{Text: "done"}, nil
	}), Log: log})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		how       startCommit
		wantTimer bool
	}{{startWithFirstStep, true}, {startHandedOver, false}} {
		task := Task{ID: "s-" + string(rune('0'+c.how)), Prompt: "go"}
		s, err := r.create(context.Background(), &task, c.how)
		if err != nil {
			t.Fatal(err)
		}
		s.c.mu.Lock()
		armed, buffered := s.c.armed, len(s.c.buf)
		s.c.mu.Unlock()
		if armed != c.wantTimer || buffered == 0 {
			t.Errorf("start committed %d: late handover armed %v (want %v), %d events buffered", c.how, armed, c.wantTimer, buffered)
		}
		if c.how == startHandedOver {
			saved := s.c.handOverWatched()
			select {
			case err := <-saved:
				t.Fatalf("the start reported saved (%v) before its commit did", err)
			default:
			}
			log.mu.Lock()
			handed, done := log.handed[len(log.handed)-1], log.pending[len(log.pending)-1]
			log.mu.Unlock()
			if len(handed) == 0 || handed[0].Type != "session.started" {
				t.Fatalf("the watched commit holds %d events", len(handed))
			}
			done(nil)
			if err := <-saved; err != nil {
				t.Fatal(err)
			}
		}
		s.c.mu.Lock()
		s.c.disarm()
		s.c.mu.Unlock()
		r.release(s)
	}
}
