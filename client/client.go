// Package client is a Go client of agentloop's HTTP API: what
// `agentloop --server URL` uses. It speaks the wire types of package api
// and links nothing else of agentloop. Errors from the server keep its
// message (the problem document's detail) and its status.
package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/agentloop/agentloop/api"
)

// Client talks to one server.
type Client struct {
	// Base is the server's URL, e.g. http://127.0.0.1:7420.
	Base string
	// Key is the API key, if the server needs one.
	Key  string
	HTTP *http.Client
}

// Error is a refusal from the server.
type Error struct {
	Status int
	Detail string
}

func (e *Error) Error() string { return e.Detail }

func (c *Client) http() *http.Client {
	if c.HTTP != nil {
		return c.HTTP
	}
	return http.DefaultClient
}

func (c *Client) do(ctx context.Context, method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimRight(c.Base, "/")+path, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.Key != "" {
		req.Header.Set("Authorization", "Bearer "+c.Key)
	}
	resp, err := c.http().Do(req)
	if err != nil {
		return fmt.Errorf("agentloop server %s: %w (is agentloop serve running there? check --server / AGENTLOOP_SERVER)", c.Base, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 400 {
		var p struct{ Detail string }
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		if json.Unmarshal(b, &p) != nil || p.Detail == "" {
			p.Detail = fmt.Sprintf("HTTP %d from %s: %s", resp.StatusCode, c.Base, strings.TrimSpace(string(b)))
		}
		return &Error{Status: resp.StatusCode, Detail: p.Detail}
	}
	if out == nil || resp.StatusCode == http.StatusNoContent {
		return nil
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

// Start starts a session.
func (c *Client) Start(ctx context.Context, req api.StartRequest) (api.Created, error) {
	var out api.Created
	return out, c.do(ctx, "POST", "/v1/sessions", req, &out)
}

// Revoke ends the allowance of a call allowed for the rest of the session
// (approved with ForSession): it asks again.
func (c *Client) Revoke(ctx context.Context, id, argsHash, reason string) (api.ControlResult, error) {
	var out api.ControlResult
	path := "/v1/sessions/" + url.PathEscape(id) + "/allowances/" + url.PathEscape(argsHash)
	if reason != "" {
		path += "?reason=" + url.QueryEscape(reason)
	}
	return out, c.do(ctx, "DELETE", path, nil, &out)
}

// FollowUp starts a session that finishes what the ended session id
// left; req may give its task, model or limits (the rest is the ended
// session's).
func (c *Client) FollowUp(ctx context.Context, id string, req api.StartRequest) (api.Created, error) {
	var out api.Created
	return out, c.do(ctx, "POST", "/v1/sessions/"+url.PathEscape(id)+"/follow-up", req, &out)
}

// Get reads a session's state into state, as encoding/json decodes it:
// a *loop.State for the whole typed state, a *api.Summary for its
// header, or a map.
func (c *Client) Get(ctx context.Context, id string, state any) error {
	return c.do(ctx, "GET", "/v1/sessions/"+url.PathEscape(id), nil, state)
}

// List returns sessions, newest first (status "" for all).
func (c *Client) List(ctx context.Context, status string, limit int) ([]api.Summary, error) {
	f := Filter{Limit: limit}
	if status != "" {
		f.Status = []string{status}
	}
	return c.Sessions(ctx, f)
}

// Filter narrows Sessions; every field given must hold.
type Filter struct {
	// Status keeps sessions with any of these statuses (none: all).
	Status []string
	// ForkedFrom keeps the sessions forked from this one (its direct
	// forks).
	ForkedFrom string
	// Labels keeps sessions that have every one of these labels.
	Labels map[string]string
	// Unfinished keeps only sessions that have not ended.
	Unfinished bool
	// Limit is the most sessions returned (0: the server's default).
	Limit int
}

// Sessions returns the sessions f keeps, newest first.
func (c *Client) Sessions(ctx context.Context, f Filter) ([]api.Summary, error) {
	q := url.Values{}
	if len(f.Status) > 0 {
		q.Set("status", strings.Join(f.Status, ","))
	}
	if f.ForkedFrom != "" {
		q.Set("forked_from", f.ForkedFrom)
	}
	for k, v := range f.Labels {
		q.Add("label", k+"="+v)
	}
	if f.Unfinished {
		q.Set("unfinished", "true")
	}
	if f.Limit > 0 {
		q.Set("limit", strconv.Itoa(f.Limit))
	}
	var page api.ListPage
	if err := c.do(ctx, "GET", "/v1/sessions?"+q.Encode(), nil, &page); err != nil {
		return nil, err
	}
	return page.Sessions, nil
}

// EventsPage returns the stored events after seq after.
func (c *Client) EventsPage(ctx context.Context, id string, after int64, limit int) (api.EventsPage, error) {
	var page api.EventsPage
	return page, c.do(ctx, "GET", fmt.Sprintf("/v1/sessions/%s/events?after=%d&limit=%d", url.PathEscape(id), after, limit), nil, &page)
}

// Control pauses, resumes, terminates or replies to a session (kind is
// the endpoint: pause, resume, terminate, reply).
func (c *Client) Control(ctx context.Context, id, kind string, body api.Control) (api.ControlResult, error) {
	var out api.ControlResult
	return out, c.do(ctx, "POST", "/v1/sessions/"+url.PathEscape(id)+"/"+kind, body, &out)
}

// Decide approves or denies a pending tool call.
func (c *Client) Decide(ctx context.Context, id, call string, d api.Decision) (api.ControlResult, error) {
	var out api.ControlResult
	return out, c.do(ctx, "POST", "/v1/sessions/"+url.PathEscape(id)+"/approvals/"+url.PathEscape(call), d, &out)
}

// Delete deletes an ended session.
func (c *Client) Delete(ctx context.Context, id string) error {
	return c.do(ctx, "DELETE", "/v1/sessions/"+url.PathEscape(id), nil, nil)
}

// Events follows a session's log over Server-Sent Events from seq after:
// the stored events, then new ones, until the session ends or ctx does.
// A dropped connection is resumed from the last event seen; a session
// that had ended before the first event after after ends the sequence.
// The session ends at its last session.ended, after which the server
// closes the stream: a log may hold several (one per run of a rewound
// session, and a fork's starts with its original's).
func (c *Client) Events(ctx context.Context, id string, after int64) iter.Seq2[api.Event, error] {
	return func(yield func(api.Event, error) bool) {
		for retries := 0; retries < 5; {
			req, err := http.NewRequestWithContext(ctx, "GET", strings.TrimRight(c.Base, "/")+"/v1/sessions/"+url.PathEscape(id)+"/events", nil)
			if err != nil {
				yield(api.Event{}, err)
				return
			}
			req.Header.Set("Accept", "text/event-stream")
			req.Header.Set("Last-Event-ID", strconv.FormatInt(after, 10))
			if c.Key != "" {
				req.Header.Set("Authorization", "Bearer "+c.Key)
			}
			resp, err := c.http().Do(req)
			if err != nil {
				if ctx.Err() != nil {
					return
				}
				retries++
				continue
			}
			if resp.StatusCode >= 400 {
				b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
				resp.Body.Close()
				var p struct{ Detail string }
				json.Unmarshal(b, &p)
				yield(api.Event{}, &Error{Status: resp.StatusCode, Detail: p.Detail})
				return
			}
			if resp.StatusCode == http.StatusNoContent { // the session ended and nothing is after after
				resp.Body.Close()
				return
			}
			// ended: the last event is a session.ended, so a stream the
			// server closes now reached the session's end.
			ended := false
			sc := bufio.NewScanner(resp.Body)
			sc.Buffer(make([]byte, 1<<20), 16<<20)
			for sc.Scan() {
				data, ok := strings.CutPrefix(sc.Text(), "data: ")
				if !ok {
					continue
				}
				var ev api.Event
				if json.Unmarshal([]byte(data), &ev) != nil || ev.Seq == 0 || ev.Type == "" {
					continue // a delta, or a line that is not an event
				}
				after = ev.Seq
				retries = 0
				ended = ev.Type == sessionEnded
				if !yield(ev, nil) {
					resp.Body.Close()
					return
				}
			}
			resp.Body.Close()
			if ended || ctx.Err() != nil {
				return
			}
			retries++
		}
		yield(api.Event{}, fmt.Errorf("the event stream from %s kept breaking", c.Base))
	}
}

// sessionEnded is the type of a session's last event.
const sessionEnded = "session.ended"
