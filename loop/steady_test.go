package loop

import (
	"testing"

	"github.com/agentloop/agentloop/model"
)

// A session's history and conversation keep their records in order and
// hold little spare room: a quarter more than they hold (and the least
// step), never twice as much.
func TestAppendSteadyGrowsByAQuarter(t *testing.T) {
	var s []model.Message
	for i := range 200 {
		s = appendSteady(s, model.Message{Content: string(rune('a' + i%26))}, 8)
		if limit := len(s) + max(8, len(s)/4) + 2; cap(s) > limit { // +2: allocation size classes
			t.Fatalf("%d records held in room for %d (want at most %d)", len(s), cap(s), limit)
		}
	}
	for i, m := range s {
		if m.Content != string(rune('a'+i%26)) {
			t.Fatalf("record %d is %q", i, m.Content)
		}
	}
}
