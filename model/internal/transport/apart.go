package transport

import "github.com/agentloop/agentloop/model"

// Apart runs read — a reply's reading and decoding — on a goroutine of its
// own and waits for it. A reply is read at the deepest point of a
// session's stack, and decoding it with encoding/json recurses about a
// KiB per level of its nesting: on the session's goroutine that doubles
// its stack to 16 KiB at the first reply, and a session parked 5 KiB deep
// at every model call never gets the half back (the garbage collector
// halves a stack only while less than a quarter is used). Apart's
// goroutine starts shallow and takes its stack with it when it ends. The
// hop costs about a microsecond, nothing beside a model call; the OpenAI
// client's whole-reply reader, which recurses in small frames, does
// without it.
//
// A panic in read is raised again on the caller's goroutine.
func Apart(read func() (*model.Response, error)) (*model.Response, error) {
	type outcome struct {
		resp     *model.Response
		err      error
		panicked bool
		value    any
	}
	done := make(chan outcome, 1)
	go func() {
		var o outcome
		defer func() {
			if o.panicked {
				o.value = recover()
			}
			done <- o
		}()
		o.panicked = true
		o.resp, o.err = read()
		o.panicked = false
	}()
	o := <-done
	if o.panicked {
		panic(o.value)
	}
	return o.resp, o.err
}
