package transport

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/agentloop/agentloop/model"
)

// Config configures a Client for one provider endpoint.
type Config struct {
	Provider string      // name used in errors: "openai", "openrouter", "ollama", …
	URL      string      // full endpoint URL
	Header   http.Header // sent with every request (auth, API version)

	// HTTPClient, when set, is used as is (its transport's own dial limits
	// apply instead of Timeouts.Connect).
	HTTPClient *http.Client
	Timeouts   Timeouts
	Retry      Retry

	// KeyHint is appended to 401 and 403 errors, e.g.
	// "check --api-key or OPENAI_API_KEY".
	KeyHint string
	// StatusHint, when set, may return a hint for a non-2xx reply; an empty
	// result falls back to the defaults.
	StatusHint func(status int, apiMessage, model string) string
	// UnreachableHint, when set, is appended to "connection refused" errors.
	UnreachableHint func(model string) string
}

// Client sends requests for one endpoint.
type Client struct {
	cfg      Config
	secrets  []string // credentials sent with every request, never shown
	hc       *http.Client
	timeouts Timeouts
	retry    Retry
	loopback bool
	shownURL string // cfg.URL without credentials, for errors
}

// New returns a Client for cfg.
func New(cfg Config) *Client {
	c := &Client{cfg: cfg, timeouts: cfg.Timeouts.withDefaults(), retry: cfg.Retry.withDefaults()}
	c.hc = cfg.HTTPClient
	if c.hc == nil {
		c.hc = newHTTPClient(c.timeouts.Connect)
	}
	c.shownURL = cfg.URL
	c.secrets = secretsOf(cfg.Header, cfg.URL)
	if u, err := url.Parse(cfg.URL); err == nil {
		host := u.Hostname()
		ip := net.ParseIP(host)
		c.loopback = host == "localhost" || (ip != nil && ip.IsLoopback())
		if u.User != nil {
			u.User = nil // a password in the base URL never reaches an error or the log
			c.shownURL = u.String()
		}
	}
	return c
}

func newHTTPClient(connect time.Duration) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	d := &net.Dialer{Timeout: connect, KeepAlive: 30 * time.Second}
	tr.DialContext = d.DialContext
	tr.TLSHandshakeTimeout = connect
	tr.MaxIdleConnsPerHost = 16
	return &http.Client{Transport: tr}
}

// Handler parses a 2xx reply. It returns an error from Reply.Malformed for
// replies it cannot parse, Transient(err) for an error the server reports
// as temporary (e.g. an "overloaded" stream event), the body's read errors
// unchanged, or any other error to end the call.
type Handler func(r *Reply) (*model.Response, error)

// Reply is a 2xx response handed to a Handler.
type Reply struct {
	Call
	Header    http.Header
	MediaType string // Content-Type without parameters, lower case
	Body      io.Reader

	stream  model.StreamFunc
	emitted bool
}

// Emit passes a delta to the caller's StreamFunc. Once a delta has been
// emitted the call is no longer retried, so the caller never sees a reply
// twice.
func (r *Reply) Emit(d model.Delta) {
	r.emitted = true
	if r.stream != nil {
		r.stream(d)
	}
}

// SetStream sets the StreamFunc Emit calls, for tests that hand a Handler a
// Reply of their own.
func (r *Reply) SetStream(fn model.StreamFunc) { r.stream = fn }

// Streaming reports whether the caller passed a StreamFunc.
func (r *Reply) Streaming() bool { return r.stream != nil }

// Malformed returns a *MalformedError for this call.
func (r *Reply) Malformed(format string, args ...any) error {
	return &MalformedError{Call: r.Call, Detail: fmt.Sprintf(format, args...)}
}

// Transient marks an error the server reported as temporary, so the call is
// retried when nothing was emitted yet.
func Transient(err error) error { return &transientError{err} }

type transientError struct{ err error }

func (e *transientError) Error() string { return e.err.Error() }
func (e *transientError) Unwrap() error { return e.err }

// readError is an I/O error from the response body.
type readError struct{ err error }

func (e *readError) Error() string { return e.err.Error() }
func (e *readError) Unwrap() error { return e.err }

// Do POSTs body (JSON) for modelName, retrying as the policy allows, and
// hands the first 2xx reply to handle. Each attempt takes its bytes from
// body and lets go of them once they are written (see Body).
//
// A span in ctx hears of the call (see trace.go).
func (c *Client) Do(ctx context.Context, modelName string, body *Body, stream model.StreamFunc, handle Handler) (*model.Response, error) {
	c.reportServer(ctx)
	resp, err := c.do(ctx, modelName, body, stream, handle)
	if err != nil {
		reportFailure(ctx, err)
		// Providers quote the key they refused: no error leaves with it.
		err = redact(err, c.secrets)
	}
	return resp, err
}

func (c *Client) do(ctx context.Context, modelName string, body *Body, stream model.StreamFunc, handle Handler) (*model.Response, error) {
	call := Call{Provider: c.cfg.Provider, URL: c.shownURL, Model: modelName}
	// The total limit is enforced by each attempt's own timer, so a call
	// that succeeds at once needs no context of its own for it; a deadline
	// context is made only before the first wait between attempts, which
	// it must also bound.
	var end time.Time
	if t := c.timeouts.Total; t > 0 {
		end = time.Now().Add(t)
	}
	if ctx.Err() != nil {
		return nil, c.stopped(ctx, call)
	}
	resp, err, retry, retryAfter := c.attempt(ctx, call, end, body, stream, handle)
	if err == nil || !retry {
		return resp, err
	}
	return c.retrying(ctx, call, end, body, stream, handle, err, retryAfter)
}

// retrying makes the attempts after a first one that failed with err,
// worth another (retryAfter is the server's hint), as the policy allows.
// It is apart from do so that a call answered at once carries none of its
// frame down to where the reply is decoded (see newRequest).
//
//go:noinline
func (c *Client) retrying(ctx context.Context, call Call, end time.Time, body *Body, stream model.StreamFunc, handle Handler, err error, retryAfter time.Duration) (*model.Response, error) {
	if !end.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadlineCause(ctx, end, &TimeoutError{Call: call, Limit: "total", After: c.timeouts.Total})
		defer cancel()
	}
	for attempt := 1; ; attempt++ {
		// Attempt number attempt failed with err, worth another.
		if ctx.Err() != nil {
			return nil, c.stopped(ctx, call)
		}
		if attempt >= c.retry.MaxAttempts {
			return nil, &model.RetryableError{Err: fmt.Errorf("%w (gave up after %s)", err, plural(attempt, "attempt")), RetryAfter: retryAfter}
		}
		if retryAfter > c.retry.MaxRetryAfter {
			return nil, &model.RetryableError{Err: fmt.Errorf("%w (server asked to wait %s, longer than the %s limit)", err, retryAfter, c.retry.MaxRetryAfter), RetryAfter: retryAfter}
		}
		if err := c.retry.Sleep(ctx, c.retry.backoff(attempt, retryAfter)); err != nil || ctx.Err() != nil {
			return nil, c.stopped(ctx, call)
		}
		var resp *model.Response
		var retry bool
		resp, err, retry, retryAfter = c.attempt(ctx, call, end, body, stream, handle)
		if err == nil || !retry {
			return resp, err
		}
	}
}

// stopped is the error for a call whose context ended: the total timeout,
// or the caller's cancellation.
func (c *Client) stopped(ctx context.Context, call Call) error {
	cause := context.Cause(ctx)
	var te *TimeoutError
	if errors.As(cause, &te) {
		return te
	}
	return fmt.Errorf("%s: call to %s stopped: %w", call.Provider, call.where(), cause)
}

// Header values set on every request. They are shared, never modified, and
// have no spare capacity, so an append by anyone else copies them.
var (
	contentTypeJSON = []string{"application/json"}[:1:1]
	acceptJSON      = []string{"application/json"}[:1:1]
	acceptStream    = []string{"text/event-stream, application/x-ndjson, application/json"}[:1:1]
)

// attemptState is what one attempt needs beyond the request, in one
// allocation.
type attemptState struct {
	body  timedBody
	reply Reply
	// sent reads the request's bytes (sentBuf) to net/http, which writes
	// them and then reports it through trace.WroteRequest: sent lets go of
	// them there (see Body).
	sent    bytes.Reader
	sentBuf []byte
	trace   httptrace.ClientTrace
}

// wrote is trace.WroteRequest. net/http calls it once the request and its
// body are written, on the goroutine that read sent, so nothing reads sent
// after the reset, and the bytes go back to the pool. A write that failed
// keeps them: net/http may send a body it did not start reading again, on
// another connection, from the same reader (a body it read it asks of
// GetBody, Body.again, instead).
func (st *attemptState) wrote(info httptrace.WroteRequestInfo) {
	if info.Err != nil {
		return
	}
	st.sent.Reset(nil)
	putSent(st.sentBuf)
	st.sentBuf = nil
}

// attempt makes one request. end is the deadline of the whole call (zero
// for none). retry reports whether the failure is worth another attempt;
// retryAfter is the server's hint.
func (c *Client) attempt(ctx context.Context, call Call, end time.Time, body *Body, stream model.StreamFunc, handle Handler) (_ *model.Response, err error, retry bool, retryAfter time.Duration) {
	actx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	st := &attemptState{body: timedBody{cancel: cancel, call: call, firstByte: c.timeouts.FirstByte, idle: c.timeouts.Idle, end: end, total: c.timeouts.Total}}
	req, err := c.newRequest(actx, call, st, body, stream != nil)
	if err != nil {
		return nil, err, false, 0
	}

	tb := &st.body
	tb.timed = tb.firstByte > 0 || tb.idle > 0 || !end.IsZero()
	if tb.timed {
		tb.start = time.Now()
		tb.setPhase(waitingFirstByte)
	}
	defer tb.stop()

	resp, err := c.hc.Do(req)
	if err != nil {
		return c.failed(ctx, actx, call, err, false)
	}
	defer resp.Body.Close()
	reportStatus(ctx, resp.StatusCode)
	tb.rc = resp.Body
	mediaType := parseMediaType(resp.Header.Get("Content-Type"))

	if resp.StatusCode < 200 || resp.StatusCode > 299 || mediaType == "text/html" {
		return c.refused(ctx, actx, call, resp, mediaType, tb)
	}

	r := &st.reply
	*r = Reply{Call: call, Header: resp.Header, MediaType: mediaType, Body: tb, stream: stream}
	out, err := handle(r)
	if err != nil {
		return c.failed(ctx, actx, call, err, r.emitted)
	}
	tb.drain()
	return out, nil, false, 0
}

// The helpers below keep what attempt does on rare paths (building the
// request, reading a refusal) out of its frame: a reply is decoded from
// inside attempt, at the deepest point of a session's stack, and a stack
// that grows past 8 KiB there stays 16 KiB for the rest of the session.

// newRequest builds the POST of the body's next bytes with the client's
// headers. The request holds the bytes only until they are written
// (attemptState.wrote), and asks body to encode them again when net/http
// must send it again. The bytes go in a *bytes.Reader, which net/http
// writes with the headers in one write; a reader of its own would have
// it flush the headers apart and copy the body through a buffer it makes.
//
//go:noinline
func (c *Client) newRequest(ctx context.Context, call Call, st *attemptState, body *Body, stream bool) (*http.Request, error) {
	b, err := body.take()
	if err != nil {
		return nil, fmt.Errorf("%s: encoding the request: %w", call.Provider, err)
	}
	st.sent.Reset(b)
	st.sentBuf = b
	st.trace.WroteRequest = st.wrote
	req, err := http.NewRequestWithContext(httptrace.WithClientTrace(ctx, &st.trace), http.MethodPost, c.cfg.URL, &st.sent)
	if err != nil {
		return nil, fmt.Errorf("%s: building request for %s: %w", call.Provider, call.where(), err)
	}
	// Not the GetBody NewRequest made, which holds a copy of the reader
	// and so the bytes: body encodes them again.
	req.GetBody = body.again
	for k, v := range c.cfg.Header {
		req.Header[k] = v
	}
	// As Header.Set would, without allocating the value slices.
	req.Header["Content-Type"] = contentTypeJSON
	if stream {
		req.Header["Accept"] = acceptStream
	} else {
		req.Header["Accept"] = acceptJSON
	}
	propagate(ctx, req.Header)
	return req, nil
}

// refused is attempt's outcome for a reply that is not a 2xx one, or an
// HTML page instead of JSON or an event stream.
//
//go:noinline
func (c *Client) refused(ctx, actx context.Context, call Call, resp *http.Response, mediaType string, tb *timedBody) (_ *model.Response, _ error, retry bool, _ time.Duration) {
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		data, rerr := io.ReadAll(io.LimitReader(tb, 64<<10))
		if rerr != nil && actx.Err() != nil {
			return c.failed(ctx, actx, call, rerr, false)
		}
		se := c.statusError(call, resp, mediaType, data)
		return nil, se, retryableStatus(resp.StatusCode), se.RetryAfter
	}
	data, _ := io.ReadAll(io.LimitReader(tb, 4<<10))
	return nil, &MalformedError{Call: call, Detail: fmt.Sprintf("HTTP %d with content type text/html instead of JSON or an event stream (is the base URL right?): %s",
		resp.StatusCode, DescribeBody(mediaType, data))}, false, 0
}

// parseMediaType is the media type of a Content-Type value, lower case and
// without parameters ("" when it cannot be parsed), as mime.ParseMediaType
// returns it; the values servers commonly send are answered without
// parsing (and without the map of parameters that allocates).
func parseMediaType(v string) string {
	switch v {
	case "application/json", "text/event-stream", "application/x-ndjson":
		return v
	case "application/json; charset=utf-8":
		return "application/json"
	case "text/event-stream; charset=utf-8":
		return "text/event-stream"
	}
	mt, _, _ := mime.ParseMediaType(v)
	return mt
}

// failed classifies an error from sending the request or handling the reply.
func (c *Client) failed(ctx, actx context.Context, call Call, err error, emitted bool) (_ *model.Response, _ error, retry bool, _ time.Duration) {
	if ctx.Err() != nil {
		return nil, c.stopped(ctx, call), false, 0
	}
	var transient error
	var te *TimeoutError
	var tr *transientError
	var re *readError
	var oe *net.OpError
	switch {
	case actx.Err() != nil && errors.As(context.Cause(actx), &te):
		if te.Limit == "total" {
			// The whole call is out of time: nothing more to try.
			return nil, te, false, 0
		}
		transient = te
	case errors.As(err, &oe) && oe.Op == "dial" && oe.Timeout():
		transient = &TimeoutError{Call: call, Limit: "connect", After: c.timeouts.Connect}
	case errors.Is(err, model.ErrMalformed):
		return nil, err, false, 0
	case errors.As(err, &tr):
		transient = tr.err
	case errors.As(err, &re):
		transient = &NetError{Call: call, Op: "connection lost while reading the reply from", Err: re.err}
	case errors.Is(err, syscall.ECONNREFUSED):
		ne := &NetError{Call: call, Op: "cannot reach", Err: syscall.ECONNREFUSED}
		if c.cfg.UnreachableHint != nil {
			ne.Hint = c.cfg.UnreachableHint(call.Model)
		}
		if c.loopback {
			// Nothing listens on this machine: waiting will not help, and
			// the person wants the hint now.
			return nil, &model.RetryableError{Err: ne}, false, 0
		}
		transient = ne
	default:
		var ue *url.Error
		if !errors.As(err, &ue) {
			return nil, err, false, 0
		}
		ne := &NetError{Call: call, Op: "cannot reach", Err: ue.Err}
		var nerr net.Error
		if !errors.As(ue.Err, &nerr) && !errors.Is(ue.Err, io.EOF) && !errors.Is(ue.Err, io.ErrUnexpectedEOF) {
			// A bad URL or a TLS certificate problem: trying again will
			// not help.
			return nil, ne, false, 0
		}
		transient = ne
	}
	if emitted {
		return nil, &model.RetryableError{Err: transient}, false, 0
	}
	return nil, transient, true, 0
}

func (c *Client) statusError(call Call, resp *http.Response, mediaType string, body []byte) *StatusError {
	msg, ok := APIErrorText(body)
	if !ok {
		msg = DescribeBody(mediaType, body)
	}
	msg = redactText(msg, c.secrets)
	se := &StatusError{Call: call, StatusCode: resp.StatusCode, Message: msg,
		RetryAfter: parseRetryAfter(resp.Header, c.retry.Now())}
	if c.cfg.StatusHint != nil {
		se.Hint = c.cfg.StatusHint(resp.StatusCode, msg, call.Model)
	}
	if se.Hint == "" {
		switch resp.StatusCode {
		case http.StatusUnauthorized, http.StatusForbidden:
			se.Hint = c.cfg.KeyHint
		case http.StatusNotFound:
			se.Hint = "check the model name and --base-url"
		}
	}
	return se
}

// timedBody enforces the first-byte, idle and total limits on an attempt
// and marks the read errors of its response body. One timer, made only
// when some limit is set, serves all of them: it is set for whichever limit
// runs out first in the current phase (waiting for the first byte, reading,
// draining). A read only notes its time; the timer, on firing, checks the
// limit against the latest read and either sets itself again or cancels
// the attempt with that limit's TimeoutError.
type timedBody struct {
	rc        io.Reader
	cancel    context.CancelCauseFunc
	call      Call
	start     time.Time // when the attempt began; read times count from it
	firstByte time.Duration
	idle      time.Duration
	end       time.Time     // deadline of the whole call, zero for none
	total     time.Duration // the total limit, for its error
	timed     bool          // some limit is set
	begun     bool          // a byte of the body has been read
	eof       bool          // the body has been read to its end
	lr        io.LimitedReader
	lastRead  atomic.Int64 // nanoseconds from start to the latest read

	mu         sync.Mutex
	timer      *time.Timer
	phase      int
	drainStart time.Time
	done       bool
}

const (
	waitingFirstByte = iota
	reading
	draining
)

// deadline returns the limit that runs out first in the current phase,
// its length, and when it runs out (zero when no limit applies). b.mu is
// held.
func (b *timedBody) deadline() (limit string, after time.Duration, due time.Time) {
	switch b.phase {
	case waitingFirstByte:
		if b.firstByte > 0 {
			limit, after, due = "first-byte", b.firstByte, b.start.Add(b.firstByte)
		}
	case reading:
		if b.idle > 0 {
			limit, after, due = "idle", b.idle, b.start.Add(time.Duration(b.lastRead.Load())+b.idle)
		}
	case draining:
		limit, due = "", b.drainStart.Add(drainWait)
	}
	if !b.end.IsZero() && (due.IsZero() || b.end.Before(due)) {
		limit, after, due = "total", b.total, b.end
	}
	return limit, after, due
}

// setPhase enters phase and sets the timer for it.
func (b *timedBody) setPhase(phase int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.done {
		return
	}
	b.phase = phase
	if phase == draining {
		b.drainStart = time.Now()
	}
	_, _, due := b.deadline()
	switch {
	case due.IsZero():
		if b.timer != nil {
			b.timer.Stop()
		}
	case b.timer == nil:
		b.timer = time.AfterFunc(time.Until(due), b.fire)
	default:
		b.timer.Reset(time.Until(due))
	}
}

// fire cancels the attempt if the limit it was set for has run out, and
// otherwise (a read came since, or the phase changed) sets the timer again.
func (b *timedBody) fire() {
	b.mu.Lock()
	if b.done {
		b.mu.Unlock()
		return
	}
	limit, after, due := b.deadline()
	if due.IsZero() {
		b.mu.Unlock()
		return
	}
	if d := time.Until(due); d > 0 {
		b.timer.Reset(d)
		b.mu.Unlock()
		return
	}
	b.done = true
	b.mu.Unlock()
	if limit == "" {
		b.cancel(nil)
		return
	}
	b.cancel(&TimeoutError{Call: b.call, Limit: limit, After: after})
}

func (b *timedBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if n > 0 && b.timed {
		b.lastRead.Store(int64(time.Since(b.start)))
		if !b.begun {
			b.begun = true
			b.setPhase(reading)
		}
	}
	if err == io.EOF {
		b.eof = true
	} else if err != nil {
		err = &readError{err}
	}
	return n, err
}

// drainWait bounds the wait for the end of a body after its terminal event.
const drainWait = 200 * time.Millisecond

// drain reads the little that may follow the terminal event (the chunked
// encoding's end) so the connection can be reused, but gives up quickly on
// a server that keeps the stream open. A body already read to its end
// needs nothing.
func (b *timedBody) drain() {
	if b.eof {
		return
	}
	b.setPhase(draining)
	b.lr = io.LimitedReader{R: b.rc, N: 4 << 10}
	_, _ = io.Copy(io.Discard, &b.lr)
}

func (b *timedBody) stop() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.done = true
	if b.timer != nil {
		b.timer.Stop()
	}
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// Endpoint joins an API root and a path, keeping the root's query (a key
// some gateways take as ?key=) after the path, where a server reads it.
func Endpoint(base, path string) string {
	u, err := url.Parse(base)
	if err != nil || u.RawQuery == "" {
		return strings.TrimRight(base, "/") + path
	}
	u.Path = strings.TrimRight(u.Path, "/") + path
	u.RawPath = ""
	return u.String()
}
