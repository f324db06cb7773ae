package loop

import (
	"encoding/json"
	"strconv"

	"github.com/agentloop/agentloop/internal/jsonw"
	"github.com/agentloop/agentloop/model"
)

// appendPayload appends the JSON encoding of the payloads a session
// records at every iteration — iteration.started and .ended,
// model.responded, tool.started and .finished — byte for byte as
// json.Marshal writes them, without reflection: they are nearly every
// event stored, and json.Marshal spent 0.6 µs on each (most of it
// checking and compacting the raw arguments). It reports false for any
// other payload, and for a value it does not write itself (raw JSON that
// is not already compact and plain, a cost that is not a finite number,
// files a tool modified): EncodeData then uses json.Marshal, which also
// words its errors. A field added to one of these payloads is added here;
// TestAppendPayloadMatchesMarshal fills every field to catch one missed.
func appendPayload(b []byte, p Payload) ([]byte, bool) {
	switch p := p.(type) {
	case *IterationStarted:
		if p == nil {
			return b, false
		}
		b = append(b, `{"n":`...)
		b = strconv.AppendInt(b, int64(p.N), 10)
		return append(b, '}'), true
	case *IterationEnded:
		if p == nil {
			return b, false
		}
		b = append(b, `{"n":`...)
		b = strconv.AppendInt(b, int64(p.N), 10)
		b = append(b, `,"status":`...)
		b = jsonw.AppendString(b, string(p.Status), true)
		b = optString(b, `,"error":`, p.Error)
		b = optString(b, `,"answer":`, p.Answer)
		return append(b, '}'), true
	case *ToolStarted:
		if p == nil {
			return b, false
		}
		b = appendCallHead(b, p.Iteration, p.CallID, p.Name)
		b = append(b, `,"input":`...)
		b, ok := appendPlainRaw(b, p.Input)
		return append(b, '}'), ok
	case *ToolFinished:
		if p == nil || len(p.Modified) > 0 || len(p.Images) > 0 {
			return b, false
		}
		b = appendCallHead(b, p.Iteration, p.CallID, p.Name)
		b = append(b, `,"output":`...)
		b = jsonw.AppendString(b, p.Output, true)
		b = optTrue(b, `,"is_error":true`, p.IsError)
		b = append(b, `,"duration_ms":`...)
		b = strconv.AppendInt(b, p.DurationMS, 10)
		b = optTrue(b, `,"refused":true`, p.Refused)
		b = optTrue(b, `,"unknown":true`, p.Unknown)
		b = optTrue(b, `,"failed":true`, p.Failed)
		return append(b, '}'), true
	case *ModelResponded:
		if p == nil {
			return b, false
		}
		return appendModelResponded(b, p)
	}
	return b, false
}

// appendCallHead opens a tool event's object with the fields tool.started
// and tool.finished begin with.
func appendCallHead(b []byte, iteration int, callID, name string) []byte {
	b = append(b, `{"iteration":`...)
	b = strconv.AppendInt(b, int64(iteration), 10)
	b = append(b, `,"call_id":`...)
	b = jsonw.AppendString(b, callID, true)
	b = append(b, `,"name":`...)
	return jsonw.AppendString(b, name, true)
}

func appendModelResponded(b []byte, p *ModelResponded) ([]byte, bool) {
	b = append(b, `{"iteration":`...)
	b = strconv.AppendInt(b, int64(p.Iteration), 10)
	b = optString(b, `,"text":`, p.Text)
	if len(p.ToolCalls) > 0 {
		b = append(b, `,"tool_calls":[`...)
		for i, tc := range p.ToolCalls {
			if i > 0 {
				b = append(b, ',')
			}
			var ok bool
			if b, ok = appendToolCall(b, &tc); !ok {
				return b, false
			}
		}
		b = append(b, ']')
	}
	if len(p.Reasoning) > 0 {
		b = append(b, `,"reasoning":[`...)
		for i, r := range p.Reasoning {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"type":`...)
			b = jsonw.AppendString(b, r.Type, true)
			b = optString(b, `,"text":`, r.Text)
			b = optString(b, `,"signature":`, r.Signature)
			b = optString(b, `,"data":`, r.Data)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	b = optString(b, `,"finish_reason":`, string(p.FinishReason))
	b = append(b, `,"usage":`...)
	b = appendUsage(b, &p.Usage)
	if p.CostUSD != 0 {
		var err error
		b = append(b, `,"cost_usd":`...)
		if b, err = jsonw.AppendFloat(b, p.CostUSD); err != nil {
			return b, false
		}
	}
	b = append(b, `,"duration_ms":`...)
	b = strconv.AppendInt(b, p.DurationMS, 10)
	b = optString(b, `,"format":`, p.Format)
	b = optTrue(b, `,"wrap_up":true`, p.WrapUp)
	return append(b, '}'), true
}

func appendToolCall(b []byte, tc *model.ToolCall) ([]byte, bool) {
	b = append(b, `{"id":`...)
	b = jsonw.AppendString(b, tc.ID, true)
	b = append(b, `,"name":`...)
	b = jsonw.AppendString(b, tc.Name, true)
	b = append(b, `,"arguments":`...)
	b, ok := appendPlainRaw(b, tc.Arguments)
	if ok && len(tc.Extra) > 0 {
		b = append(b, `,"extra":`...)
		b, ok = appendPlainRaw(b, tc.Extra)
	}
	return append(b, '}'), ok
}

func appendUsage(b []byte, u *model.Usage) []byte {
	b = append(b, `{"input_tokens":`...)
	b = strconv.AppendInt(b, int64(u.InputTokens), 10)
	b = append(b, `,"output_tokens":`...)
	b = strconv.AppendInt(b, int64(u.OutputTokens), 10)
	b = optInt(b, `,"cache_read_tokens":`, u.CacheReadTokens)
	b = optInt(b, `,"cache_write_tokens":`, u.CacheWriteTokens)
	b = optInt(b, `,"reasoning_tokens":`, u.ReasoningTokens)
	return append(b, '}')
}

// optString appends an omitempty string field.
func optString(b []byte, key, s string) []byte {
	if s == "" {
		return b
	}
	return jsonw.AppendString(append(b, key...), s, true)
}

// optInt appends an omitempty integer field.
func optInt(b []byte, key string, n int) []byte {
	if n == 0 {
		return b
	}
	return strconv.AppendInt(append(b, key...), int64(n), 10)
}

// optTrue appends an omitempty boolean field, written whole in field.
func optTrue(b []byte, field string, v bool) []byte {
	if !v {
		return b
	}
	return append(b, field...)
}

// appendPlainRaw appends raw JSON as json.Marshal writes a
// json.RawMessage — nil as null, anything else checked, compacted and
// with <, >, & and U+2028/U+2029 escaped — when that is raw itself: valid
// JSON with no whitespace outside strings and none of the characters
// escaped. It reports false otherwise.
func appendPlainRaw(b []byte, raw json.RawMessage) ([]byte, bool) {
	if raw == nil {
		return append(b, "null"...), true
	}
	if !compactScan(raw, true) || !json.Valid(raw) {
		return b, false
	}
	return append(b, raw...), true
}
