package server

import (
	"reflect"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/model"
)

// textLog records what a replyText shows, and assembles it as a client
// does: a correction replaces the message's text.
type textLog struct {
	ops  []string
	msgs map[string]string
}

func newTextLog() (*textLog, *replyText) {
	l := &textLog{msgs: map[string]string{}}
	return l, &replyText{
		start:   func(id string) { l.ops = append(l.ops, "start "+id) },
		content: func(id, s string) { l.ops = append(l.ops, "+"+s); l.msgs[id] += s },
		end:     func(id string) { l.ops = append(l.ops, "end "+id) },
		correct: func(id, text string) { l.ops = append(l.ops, "correct "+id+" "+text); l.msgs[id] = text },
	}
}

func text(s string) model.Delta { return model.Delta{Text: s} }
func call(i int, name, args string) model.Delta {
	return model.Delta{ToolCallIndex: i, ToolName: name, ArgumentsFragment: args}
}

func TestReplyTextShowsWhatTheLogRecords(t *testing.T) {
	cases := []struct {
		name string
		run  func(r *replyText)
		msgs map[string]string
		ops  []string // when given, exactly what was sent
	}{{
		name: "deltas of a live reply stream, the recorded text closes it",
		run: func(r *replyText) {
			r.begin("a", true)
			r.delta(text("Hel"))
			r.delta(text("lo"))
			r.finish("Hello!", "x")
		},
		msgs: map[string]string{"a": "Hello!"},
		ops:  []string{"start a", "+Hel", "+lo", "+!", "end a"},
	}, {
		name: "deltas before the iteration is read wait for it",
		run: func(r *replyText) {
			r.delta(text("Hi "))
			r.delta(call(0, "ls", "{}"))
			r.begin("a", true)
			r.delta(text("there")) // text after tool calls: the next reply's
			r.finish("Hi ", "x")
			r.begin("b", true)
			r.finish("there", "x")
		},
		msgs: map[string]string{"a": "Hi ", "b": "there"},
		ops:  []string{"start a", "+Hi ", "end a", "start b", "+there", "end b"},
	}, {
		name: "later replies' deltas are told apart by their first tool call",
		run: func(r *replyText) {
			r.begin("a", true)
			r.delta(text("one"))
			r.delta(call(0, "ls", "{}"))
			r.delta(call(1, "cat", "{}"))
			r.delta(call(0, "ls", "{}")) // a second reply, tools only
			r.delta(text("three"))       // a third
			r.finish("one", "x")
			r.begin("b", true)
			r.finish("", "x")
			r.begin("c", true)
			r.finish("three", "x")
		},
		msgs: map[string]string{"a": "one", "c": "three"},
		ops:  []string{"start a", "+one", "end a", "start c", "+three", "end c"},
	}, {
		name: "a reader that joined mid-reply is corrected",
		run: func(r *replyText) {
			r.begin("a", true)
			r.delta(text("lo"))
			r.finish("Hello", "x")
		},
		msgs: map[string]string{"a": "Hello"},
	}, {
		name: "the next reply's text run into this one moves on to it",
		run: func(r *replyText) {
			r.begin("a", true)
			r.delta(text("Done."))
			r.delta(text("More."))
			r.finish("Done.", "x")
			r.begin("b", true)
			r.finish("More.", "x")
		},
		msgs: map[string]string{"a": "Done.", "b": "More."},
	}, {
		name: "a reply begun before the stream opened is sent whole",
		run: func(r *replyText) {
			r.begin("a", false)
			r.delta(text("llo"))
			r.finish("Hello", "x")
		},
		msgs: map[string]string{"a": "Hello"},
	}, {
		name: "a reply that never came takes back what was shown",
		run: func(r *replyText) {
			r.begin("a", true)
			r.delta(text("Hal"))
			r.begin("b", true)
			r.finish("Fine", "x")
		},
		msgs: map[string]string{"a": "", "b": "Fine"},
	}, {
		name: "a reply without deltas or text sends nothing; one without a begin uses the fallback",
		run: func(r *replyText) {
			r.begin("a", true)
			r.finish("", "x")
			r.finish("wrap-up", "w")
		},
		msgs: map[string]string{"w": "wrap-up"},
		ops:  []string{"start w", "+wrap-up", "end w"},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l, r := newTextLog()
			c.run(r)
			for id, m := range l.msgs {
				if m == "" && c.msgs[id] == "" {
					delete(l.msgs, id)
				}
			}
			for id, m := range c.msgs {
				if m == "" {
					delete(c.msgs, id)
				}
			}
			if !reflect.DeepEqual(l.msgs, c.msgs) {
				t.Errorf("messages %q, want %q (sent %q)", l.msgs, c.msgs, l.ops)
			}
			if c.ops != nil && !reflect.DeepEqual(l.ops, c.ops) {
				t.Errorf("sent %q, want %q", l.ops, c.ops)
			}
			for _, op := range l.ops {
				if strings.HasPrefix(op, "correct") && c.ops != nil {
					t.Errorf("a correction where none was needed: %q", l.ops)
				}
			}
		})
	}
}

func TestJSONPatchTurnsOneStateIntoTheNext(t *testing.T) {
	a := map[string]any{"plan": map[string]any{"goal": "g", "status": "active", "steps": []any{
		map[string]any{"title": "a/b~", "status": "pending"}, map[string]any{"title": "c", "status": "pending"}}}}
	b := map[string]any{"plan": map[string]any{"goal": "g", "status": "completed", "steps": []any{
		map[string]any{"title": "a/b~", "status": "completed", "result": "ok"}}}}
	got := jsonPatch(nil, "", a, b)
	want := []any{
		map[string]any{"op": "replace", "path": "/plan/status", "value": "completed"},
		map[string]any{"op": "replace", "path": "/plan/steps/0/status", "value": "completed"},
		map[string]any{"op": "add", "path": "/plan/steps/0/result", "value": "ok"},
		map[string]any{"op": "remove", "path": "/plan/steps/1"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("patch\n got %v\nwant %v", got, want)
	}
	if p := jsonPatch(nil, "", b, b); len(p) != 0 {
		t.Errorf("no change made a patch: %v", p)
	}
	if p := jsonPatch(nil, "", map[string]any{"a/b": 1}, map[string]any{}); !reflect.DeepEqual(p, []any{map[string]any{"op": "remove", "path": "/a~1b"}}) {
		t.Errorf("keys are not escaped: %v", p)
	}
}
