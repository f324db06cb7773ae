package server

import (
	"encoding/json"
	"strconv"

	"github.com/agentloop/agentloop/internal/memo"
	"github.com/agentloop/agentloop/loop"
)

// encodings caches the JSON of recent events, so an event followed by
// many readers is encoded once, not once per reader. Events never change
// once recorded, so a cached encoding is always right.
type encodings struct{ c *memo.Cache[[]byte] }

const encodingsKept = 4096

func newEncodings() encodings { return encodings{memo.New[[]byte](encodingsKept)} }

func (e encodings) encode(ev loop.Event) ([]byte, error) {
	return e.c.Get(ev.SessionID+"/"+strconv.FormatInt(ev.Seq, 10), func() ([]byte, error) { return json.Marshal(ev) })
}
