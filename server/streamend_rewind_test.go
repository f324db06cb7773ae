package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/coder/websocket/wsjson"
)

// A session.ended that a rewind left behind is history: a stream of the
// session from its start runs on through the steps after it and ends
// only at the session's last end, over SSE and WebSocket alike. A stream
// opened while the rewound session is paused stays open and follows it
// when it resumes.
func TestStreamsOfARewoundSessionEndAtItsLastEnd(t *testing.T) {
	a := newRewindAPI(t, true)
	s := writesScript(t, a.dir, [2]string{"a.txt", "one"}, [2]string{"b.txt", "two"})
	ws := filepath.Join(a.dir, "ws", "streams")
	id := a.create("", fmt.Sprintf(`{"task":"write","model":"script:%s","workspace":%q}`, s, ws))
	a.waitStatus("", id, "completed")
	if code, out, _ := a.do("POST", "/v1/sessions/"+id+"/rewind", "", `{"at":1}`); code != 200 {
		t.Fatalf("rewind: %d %s", code, out)
	}
	a.waitStatus("", id, "paused")

	// Opened while paused, past the first session.ended: it must still be
	// open to see the resumed run's end.
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", a.url+"/v1/sessions/"+id+"/events", nil)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	type seen struct {
		seq  string
		kind string
	}
	got := make(chan []seen, 1)
	go func() {
		var all []seen
		var cur seen
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			if v, ok := strings.CutPrefix(line, "id: "); ok {
				cur.seq = v
			} else if v, ok := strings.CutPrefix(line, "event: "); ok && cur.seq != "" {
				cur.kind = v
				all = append(all, cur)
				cur = seen{}
			}
		}
		got <- all
	}()
	if code, out, _ := a.do("POST", "/v1/sessions/"+id+"/resume", "", ``); code != 202 {
		t.Fatalf("resume: %d %s", code, out)
	}
	a.waitStatus("", id, "completed")
	_, out, _ := a.do("GET", "/v1/sessions/"+id, "", "")
	var st struct{ Seq int64 }
	json.Unmarshal([]byte(out), &st)

	var sse []seen
	select {
	case sse = <-got:
	case <-ctx.Done():
		t.Fatal("the SSE stream did not end after the session's last end")
	}
	ends := 0
	for _, e := range sse {
		if e.kind == "session.ended" {
			ends++
		}
	}
	if ends != 2 || len(sse) == 0 || sse[len(sse)-1].seq != fmt.Sprint(st.Seq) {
		t.Fatalf("SSE from the start: %d session.ended, last %v, want 2 and seq %d", ends, sse[len(sse)-1:], st.Seq)
	}

	// The same log over a WebSocket from the start.
	conn, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(a.url, "http")+"/v1/sessions/"+id+"/events", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.CloseNow()
	var last int64
	wsEnds := 0
	for {
		var msg struct {
			Type string
			Seq  int64
		}
		if err := wsjson.Read(ctx, conn, &msg); err != nil {
			if websocket.CloseStatus(err) != websocket.StatusNormalClosure {
				t.Fatalf("websocket read: %v (last seq %d)", err, last)
			}
			break
		}
		if msg.Type == "session.ended" {
			wsEnds++
		}
		if msg.Seq > 0 {
			last = msg.Seq
		}
	}
	if wsEnds != 2 || last != st.Seq {
		t.Fatalf("WebSocket from the start: %d session.ended, closed after seq %d, want 2 and %d", wsEnds, last, st.Seq)
	}
}
