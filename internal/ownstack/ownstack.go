// Package ownstack runs a piece of work on a goroutine of its own, for
// work that may recurse deeply — decoding a reply with encoding/json,
// validating against a JSON schema, a tool — when its caller is a
// session's goroutine. A goroutine's stack doubles when it outgrows itself
// and is halved by the garbage collector only while less than a quarter
// is used; a session parks some 4 KiB deep at every model call, so one
// deep call on its goroutine leaves it at 16 KiB instead of 8 for the rest
// of the session — 8 KiB more for each of thousands of sessions waiting on
// their models. The work's goroutine starts shallow and takes its stack
// with it when it ends. The hop costs 0.4 µs and 3 allocations in a tight
// loop (BenchmarkRun), but some 10 µs in a program with idle processors,
// where starting the goroutine wakes another thread: nothing beside a model
// call, too much for every quick tool call.
package ownstack

// Run runs f on a goroutine of its own and waits for it. A panic in f is
// raised again on the caller's goroutine.
func Run[T any](f func() (T, error)) (T, error) {
	type outcome struct {
		v        T
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
		o.v, o.err = f()
		o.panicked = false
	}()
	o := <-done
	if o.panicked {
		panic(o.value)
	}
	return o.v, o.err
}

// Do is Run for work that returns only an error.
func Do(f func() error) error {
	_, err := Run(func() (struct{}, error) { return struct{}{}, f() })
	return err
}
