package server

import (
	"fmt"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// The front door: checks every request passes before any route sees it.
// They stop a web page the user merely visits from using a server on
// their machine.
//
//   - Host: a server without keys answers only names of loopback
//     (127.0.0.0/8, ::1, localhost), so a page that rebinds its own DNS
//     name to 127.0.0.1 cannot read answers; with keys and a public URL,
//     only that URL's host (and loopback) is answered.
//   - Cross-origin writes: a state-changing request from a browser must
//     come from this server's own origin or one the operator allowed
//     (Sec-Fetch-Site, else Origin, against Host: net/http's
//     CrossOriginProtection). A WebSocket upgrade's Origin is held to the
//     same rule.
//   - Bodies are JSON: a request with a body must say application/json, so
//     the "simple" text/plain and form posts a page may send without a
//     preflight never reach a handler.
//
// An allowed origin also gets CORS answers, so the operator's front end
// on another origin can read what it asked for.

// FrontDoor is what the front door lets in beyond this server's own
// origin and loopback names.
type FrontDoor struct {
	// AllowedOrigins are other origins (scheme://host[:port]) whose pages
	// may call the API from a browser.
	AllowedOrigins []string
	// PublicURL, with keys, is the URL clients reach the server at: its
	// host is the only non-loopback Host answered.
	PublicURL string
}

// ParseOrigin checks an origin given by an operator and returns it in the
// form browsers send (lower case, no trailing slash).
func ParseOrigin(s string) (string, error) {
	u, err := url.Parse(strings.TrimSuffix(strings.TrimSpace(s), "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Path != "" || u.RawQuery != "" || u.User != nil {
		return "", fmt.Errorf("origin %q: give scheme://host[:port], e.g. https://app.example.com", s)
	}
	return strings.ToLower(u.Scheme + "://" + u.Host), nil
}

// frontDoor is the checks, built once.
type frontDoor struct {
	cop         *http.CrossOriginProtection
	origins     map[string]bool
	wsHosts     []string // the allowed origins' hosts, for the WebSocket library's own check
	publicHost  string   // lower-case host[:port] of the public URL, or ""
	requireKeys bool
}

func newFrontDoor(cfg FrontDoor, requireKeys bool) (*frontDoor, error) {
	f := &frontDoor{cop: http.NewCrossOriginProtection(), origins: map[string]bool{}, requireKeys: requireKeys}
	for _, o := range cfg.AllowedOrigins {
		origin, err := ParseOrigin(o)
		if err != nil {
			return nil, err
		}
		if err := f.cop.AddTrustedOrigin(origin); err != nil {
			return nil, fmt.Errorf("origin %q: %v", o, err)
		}
		f.origins[origin] = true
		f.wsHosts = append(f.wsHosts, strings.SplitN(origin, "://", 2)[1])
	}
	if cfg.PublicURL != "" {
		u, err := url.Parse(cfg.PublicURL)
		if err != nil || u.Host == "" {
			return nil, fmt.Errorf("public URL %q: give scheme://host[:port]", cfg.PublicURL)
		}
		f.publicHost = strings.ToLower(u.Host)
	}
	return f, nil
}

// admit runs the checks; false means it answered the request.
func (f *frontDoor) admit(w http.ResponseWriter, r *http.Request) bool {
	if r.URL.Path != "/healthz" && r.URL.Path != "/readyz" { // probes name the server by its address
		if msg := f.hostRefused(r.Host); msg != "" {
			problem(w, http.StatusMisdirectedRequest, msg)
			return false
		}
	}
	origin := strings.ToLower(r.Header.Get("Origin"))
	if origin != "" && f.origins[origin] {
		h := w.Header()
		h.Set("Access-Control-Allow-Origin", origin)
		h.Add("Vary", "Origin")
		h.Set("Access-Control-Expose-Headers", "Location, Retry-After, Content-Type")
		if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
			h.Set("Access-Control-Allow-Methods", "GET, POST, PUT, DELETE")
			h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type, Accept, Idempotency-Key, Last-Event-ID")
			h.Set("Access-Control-Max-Age", "600")
			w.WriteHeader(http.StatusNoContent)
			return false
		}
	}
	if err := f.cop.Check(r); err != nil {
		problem(w, http.StatusForbidden, "cross-origin request refused: a page on another site may not change anything here ("+describeOrigin(r)+"); an operator can allow a front end with --allowed-origins")
		return false
	}
	if isUpgrade(r) && origin != "" && !f.origins[origin] && !sameHost(origin, r.Host) {
		problem(w, http.StatusForbidden, "WebSocket from another origin ("+origin+") refused; an operator can allow a front end with --allowed-origins")
		return false
	}
	if hasBody(r) {
		mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
		if err != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
			got := r.Header.Get("Content-Type")
			if got == "" {
				got = "none"
			}
			problem(w, http.StatusUnsupportedMediaType, "request bodies must be JSON: send Content-Type: application/json (got "+got+"); with curl, use --json")
			return false
		}
	}
	return true
}

// hostRefused says why a Host is not answered, or "".
func (f *frontDoor) hostRefused(host string) string {
	name := strings.ToLower(host)
	if h, _, err := net.SplitHostPort(name); err == nil {
		name = h
	}
	name = strings.TrimSuffix(strings.TrimPrefix(name, "["), "]")
	if isLoopbackName(name) {
		return ""
	}
	switch {
	case f.publicHost != "" && (strings.ToLower(host) == f.publicHost || name == f.publicHost):
		return ""
	case f.publicHost != "":
		return fmt.Sprintf("this server answers as %s (its --public-url), not %q", f.publicHost, host)
	case f.requireKeys:
		return ""
	}
	return fmt.Sprintf("this server runs without keys (--auth none), so it answers only loopback names (127.0.0.1, [::1], localhost), not %q: to reach it by another name, start it with --auth keys (and --public-url)", host)
}

func isLoopbackName(name string) bool {
	if name == "localhost" || strings.HasSuffix(name, ".localhost") {
		return true
	}
	ip := net.ParseIP(name)
	return ip != nil && ip.IsLoopback()
}

func isUpgrade(r *http.Request) bool {
	return strings.EqualFold(r.Header.Get("Upgrade"), "websocket")
}

// sameHost reports whether an origin names the host the request came to.
func sameHost(origin, host string) bool {
	u, err := url.Parse(origin)
	return err == nil && strings.EqualFold(u.Host, host)
}

// hasBody reports whether the request carries a body (a length, or a
// chunked one of unknown length).
func hasBody(r *http.Request) bool {
	return r.ContentLength > 0 || (r.ContentLength < 0 && r.Body != nil && r.Body != http.NoBody)
}

func describeOrigin(r *http.Request) string {
	parts := []string{}
	if v := r.Header.Get("Origin"); v != "" {
		parts = append(parts, "Origin "+v)
	}
	if v := r.Header.Get("Sec-Fetch-Site"); v != "" {
		parts = append(parts, "Sec-Fetch-Site "+v)
	}
	if len(parts) == 0 {
		return "no origin"
	}
	return strings.Join(parts, ", ")
}
