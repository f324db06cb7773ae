package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// A client that has every event of an ended session — a browser
// reconnecting with its last id — gets an end, not a stream that stays
// open: 204 over SSE, a normal close over WebSocket; one that lacks the
// last events gets them, then the end.
func TestStreamsOfEndedSessionsEnd(t *testing.T) {
	c := newCLI(t)
	script := writeScript(t, `{"steps":[{"text":"done"}]}`)
	s := c.serve("--model", "script:"+script, "--workspaces", t.TempDir())
	code, body, _ := s.send(t, request{"POST", "/v1/sessions", `{"task":"x"}`, map[string]string{"Content-Type": "application/json"}})
	if code != 201 {
		t.Fatalf("create: %d %s", code, body)
	}
	var created struct{ ID string }
	json.Unmarshal([]byte(body), &created)
	s.waitFor(t, created.ID, "completed")
	_, got, _ := s.send(t, request{"GET", "/v1/sessions/" + created.ID, "", nil})
	var st struct{ Seq int64 }
	json.Unmarshal([]byte(got), &st)
	if st.Seq < 3 {
		t.Fatalf("seq %d: %s", st.Seq, got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sse := func(last int64) (int, string) {
		req, _ := http.NewRequestWithContext(ctx, "GET", s.url+"/v1/sessions/"+created.ID+"/events", nil)
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set("Last-Event-ID", fmt.Sprint(last))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body) // returns only when the server ends the stream
		if err != nil {
			t.Fatalf("Last-Event-ID %d: the stream did not end: %v", last, err)
		}
		return resp.StatusCode, string(b)
	}
	for _, last := range []int64{st.Seq, st.Seq + 10} {
		if code, b := sse(last); code != http.StatusNoContent || b != "" {
			t.Errorf("Last-Event-ID %d of %d: %d %q, want 204", last, st.Seq, code, b)
		}
	}
	if code, b := sse(st.Seq - 1); code != 200 || strings.Count(b, "\nevent: ") != 1 || !strings.Contains(b, fmt.Sprintf("id: %d\n", st.Seq)) {
		t.Errorf("Last-Event-ID %d: %d %q, want the last event then the end", st.Seq-1, code, b)
	}

	ws := func(after int64) (events int, closed websocket.StatusCode) {
		conn, _, err := websocket.Dial(ctx, strings.Replace(s.url, "http", "ws", 1)+"/v1/sessions/"+created.ID+fmt.Sprintf("/events?after=%d", after), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.CloseNow()
		for {
			_, _, err := conn.Read(ctx)
			if err != nil {
				var ce websocket.CloseError
				if !errors.As(err, &ce) {
					t.Fatalf("WebSocket after %d: %v", after, err)
				}
				return events, ce.Code
			}
			events++
		}
	}
	if n, code := ws(st.Seq); n != 0 || code != websocket.StatusNormalClosure {
		t.Errorf("WebSocket after %d: %d messages, close %v", st.Seq, n, code)
	}
	if n, code := ws(st.Seq - 1); n != 1 || code != websocket.StatusNormalClosure {
		t.Errorf("WebSocket after %d: %d messages, close %v", st.Seq-1, n, code)
	}
}
