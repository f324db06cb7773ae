package client_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/agentloop/agentloop/client"
)

// A rewound session's log holds a session.ended for each run: Events
// goes on past the first to the one after which the server closes the
// stream, over one connection.
func TestEventsReadsPastAnEarlierEnd(t *testing.T) {
	requests := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests++
		w.Header().Set("Content-Type", "text/event-stream")
		for i, typ := range []string{"session.started", "session.ended", "session.rewound", "session.ended"} {
			fmt.Fprintf(w, "id: %d\nevent: %s\ndata: {\"session_id\":\"s1\",\"seq\":%d,\"type\":%q,\"v\":1,\"time\":\"2026-01-02T03:04:05Z\",\"data\":{}}\n\n", i+1, typ, i+1, typ)
		}
	}))
	defer srv.Close()
	c := &client.Client{Base: srv.URL}
	var got []string
	for ev, err := range c.Events(context.Background(), "s1", 0) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, fmt.Sprint(ev.Seq, " ", ev.Type))
	}
	if fmt.Sprint(got) != "[1 session.started 2 session.ended 3 session.rewound 4 session.ended]" || requests != 1 {
		t.Fatalf("events %v over %d requests", got, requests)
	}
}
