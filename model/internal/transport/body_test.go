package transport

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentloop/agentloop/model"
)

// bytesBody is a body of fixed bytes, held for as long as the Body is.
// Each attempt sends a copy: the bytes an attempt sent go to the pool.
func bytesBody(b []byte) *Body {
	return &Body{next: bytes.Clone(b), encode: func(buf []byte) ([]byte, error) { return append(buf, b...), nil }}
}

// newBody is a body whose first attempt sends first and whose later ones
// send what encode returns.
func newBody(first []byte, encode func() ([]byte, error)) *Body {
	return &Body{next: first, encode: func([]byte) ([]byte, error) { return encode() }}
}

// TestBodyLetGoOnceWritten sends a 256 KiB request to a server that reads
// it whole and then holds its reply: while the client waits, nothing may
// hold the bytes it sent (its frames, the http.Request, net/http's
// rewind), so the garbage collector frees them. A body whose encode
// function keeps the bytes is the control: the check must see it held.
func TestBodyLetGoOnceWritten(t *testing.T) {
	for _, tc := range []struct {
		name string
		held bool
	}{{"encoded again", false}, {"kept by the caller", true}} {
		t.Run(tc.name, func(t *testing.T) {
			got := make(chan []byte, 1)
			release := make(chan struct{})
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				got <- b
				<-release
				w.Header().Set("Content-Type", "application/json")
				io.WriteString(w, `{}`)
			}))
			defer srv.Close()
			defer close(release)

			var freed atomic.Bool
			sent := bytes.Repeat([]byte("x"), 256<<10)
			runtime.AddCleanup(&sent[0], func(*atomic.Bool) { freed.Store(true) }, &freed)
			body := newBody(sent, func() ([]byte, error) { return bytes.Repeat([]byte("x"), 256<<10), nil })
			if tc.held {
				body = bytesBody(sent)
			}
			sent = nil

			c := New(Config{Provider: "openai", URL: srv.URL, Retry: Retry{MaxAttempts: 1}})
			done := make(chan error, 1)
			go func() {
				_, err := c.Do(context.Background(), "m", body, nil, func(r *Reply) (*model.Response, error) {
					_, err := io.Copy(io.Discard, r.Body)
					return &model.Response{}, err
				})
				done <- err
			}()
			if b := <-got; len(b) != 256<<10 {
				t.Fatalf("the server read %d bytes, want %d", len(b), 256<<10)
			}
			for i := 0; i < 50 && !freed.Load(); i++ {
				runtime.GC()
				time.Sleep(2 * time.Millisecond)
			}
			if freed.Load() == tc.held {
				t.Fatalf("sent bytes freed while the reply was awaited: %v, want %v", freed.Load(), !tc.held)
			}
			release <- struct{}{}
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			runtime.KeepAlive(body)
		})
	}
}

// TestRetrySendsTheBodyEncodedAgain: a retry sends the same bytes, from
// the body's encode function, as the first attempt did.
func TestRetrySendsTheBodyEncodedAgain(t *testing.T) {
	var bodies [][]byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		bodies = append(bodies, b)
		if len(bodies) == 1 {
			http.Error(w, `{"error":{"message":"busy"}}`, http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{}`)
	}))
	defer srv.Close()
	encoded := 0
	body := newBody([]byte(`{"n":1}`), func() ([]byte, error) {
		encoded++
		return []byte(`{"n":1}`), nil
	})
	noSleep := func(ctx context.Context, d time.Duration) error { return ctx.Err() }
	c := New(Config{Provider: "openai", URL: srv.URL, Retry: Retry{MaxAttempts: 2, Sleep: noSleep}})
	_, err := c.Do(context.Background(), "m", body, nil, func(r *Reply) (*model.Response, error) {
		return &model.Response{}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(bodies) != 2 || encoded != 1 || string(bodies[0]) != `{"n":1}` || string(bodies[1]) != `{"n":1}` {
		t.Fatalf("bodies %q, encoded again %d times; want the same body twice, encoded again once", bodies, encoded)
	}
}

// TestRetryWhoseRequestCannotBeEncodedAgain: a retry that cannot encode
// the request again fails at once with what went wrong, not with the
// earlier attempt's refusal, and is not retried.
func TestRetryWhoseRequestCannotBeEncodedAgain(t *testing.T) {
	calls := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls++
		http.Error(w, `{"error":{"message":"busy"}}`, http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	body := newBody([]byte(`{}`), func() ([]byte, error) { return nil, errors.New("the conversation holds a NaN") })
	noSleep := func(ctx context.Context, d time.Duration) error { return ctx.Err() }
	c := New(Config{Provider: "openai", URL: srv.URL, Retry: Retry{MaxAttempts: 3, Sleep: noSleep}})
	_, err := c.Do(context.Background(), "m", body, nil, func(r *Reply) (*model.Response, error) {
		return &model.Response{}, nil
	})
	if err == nil || !strings.Contains(err.Error(), "openai: encoding the request: the conversation holds a NaN") || calls != 1 {
		t.Fatalf("err %v after %d calls; want the encoding error after 1", err, calls)
	}
}

// TestBodyAgainEncodesAgain: net/http's GetBody reads freshly encoded
// bytes, not the first attempt's (which were let go).
func TestBodyAgainEncodesAgain(t *testing.T) {
	n := 0
	b := newBody([]byte(`{"n":0}`), func() ([]byte, error) {
		n++
		return []byte(fmt.Sprintf(`{"n":%d}`, n)), nil
	})
	if first, _ := b.take(); string(first) != `{"n":0}` {
		t.Fatalf("first attempt sends %s", first)
	}
	rc, err := b.again()
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(rc)
	if string(got) != `{"n":1}` || n != 1 {
		t.Fatalf("GetBody read %s after %d encodings; want {\"n\":1} after 1", got, n)
	}
}

// TestEncodedBodyFirstEncodingFails: the first encoding's error comes back
// at once, with no body to send.
func TestEncodedBodyFirstEncodingFails(t *testing.T) {
	b, err := EncodedBody(func([]byte) ([]byte, error) { return nil, errors.New("unsupported value: NaN") })
	if b != nil || err == nil || err.Error() != "unsupported value: NaN" {
		t.Fatalf("EncodedBody = %v, %v; want no body and the encoding error", b, err)
	}
}

// TestSentBuffersReusedSafely: requests of different sizes and contents
// go out at once, each encoded in a buffer an earlier request's bytes may
// have come back in; the server must read every request as it was encoded
// — a buffer given back before net/http finished writing it would show
// another request's bytes.
func TestSentBuffersReusedSafely(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Write(b) // the reply is the request, for the client to compare
	}))
	defer srv.Close()
	c := New(Config{Provider: "openai", URL: srv.URL, Retry: Retry{MaxAttempts: 1}})
	const workers, each = 8, 200
	errs := make(chan error, workers)
	for w := range workers {
		go func() {
			for i := range each {
				want := fmt.Sprintf(`{"worker":%d,"n":%d,"pad":%q}`, w, i, strings.Repeat("x", (w*each+i)%3000))
				body, err := EncodedBody(func(buf []byte) ([]byte, error) { return append(buf, want...), nil })
				if err != nil {
					errs <- err
					return
				}
				var got string
				_, err = c.Do(context.Background(), "m", body, nil, func(r *Reply) (*model.Response, error) {
					b, err := io.ReadAll(r.Body)
					got = string(b)
					return &model.Response{}, err
				})
				if err != nil {
					errs <- err
					return
				}
				if got != want {
					errs <- fmt.Errorf("the server read %.80q…, the client encoded %.80q…", got, want)
					return
				}
			}
			errs <- nil
		}()
	}
	for range workers {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}
