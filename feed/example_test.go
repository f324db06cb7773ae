package feed_test

import (
	"context"
	"fmt"

	"github.com/agentloop/agentloop/feed"
	"github.com/agentloop/agentloop/store/memory"
	"github.com/agentloop/agentloop/store/storetest"
)

// A reader that reconnects with the last sequence number it saw gets only
// what it missed, then live events.
func Example() {
	st := memory.New()
	defer st.Close()
	f := feed.New(st)
	defer st.Watch(f.Publish)() // the store's writer publishes each commit

	ctx := context.Background()
	_ = st.Append(ctx, storetest.FakeEvents("s1", 1, 3)...)
	go func() { _ = st.Append(ctx, storetest.FakeEvents("s1", 4, 5)...) }()

	for e, err := range f.Events(ctx, "s1", 2) { // last seen: 2
		if err != nil {
			break
		}
		fmt.Println(e.Seq, e.Type)
		if e.Seq == 5 {
			break
		}
	}
	// Output:
	// 3 model.responded
	// 4 tool.started
	// 5 tool.finished
}
