// Package mcp offers the tools of MCP (Model Context Protocol) servers as
// ordinary tools: a server is started as a command speaking MCP over
// stdin/stdout or reached at a streamable HTTP URL, its tools are listed
// once, and each appears to the model under a prefixed, sanitised name with
// the server's own description and input schema. Calls go through the
// official Go SDK (github.com/modelcontextprotocol/go-sdk).
//
// A server that stops (it exits, is killed, or its URL stops answering)
// does not crash the session: its tools return error results that say so.
// On the next call after it stopped it is restarted (reconnected) once, by
// default; after that it stays down. The call that was running when the
// server stopped is not repeated (it may have had effects). The tool list is
// read once, at Connect; later changes on the server are not followed.
// A call of a tool the server marks read-only or idempotent that fails
// because the connection was lost is sent once more on a fresh connection
// (while reconnects are left); any other call is never repeated.
// Close shuts the server down, killing a stdio server's process group if it
// does not exit by itself.
//
// A URL server that follows the MCP authorization specification is reached
// with OAuth (ServerConfig.OAuth): Login, run once by a person, stores a
// token set in a TokenFile; connections send it and refresh it, and fail
// with a LoginRequiredError, never a browser or a wait, when it cannot be
// used.
package mcp

import (
	"context"
	"errors"
	"fmt"
	"github.com/agentloop/agentloop/sandbox"
	"github.com/agentloop/agentloop/tool/shell"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentloop/agentloop/tool"
)

// ServerConfig says how to reach one MCP server and how to present its
// tools. Exactly one of Command, URL and Dial must be set.
type ServerConfig struct {
	// Name identifies the server in tool names, messages and logs.
	Name string

	// Command starts a stdio server; Args are its arguments.
	Command string
	Args    []string
	// Env is added to the server's environment. Values may refer to this
	// process's environment as ${NAME}, so secrets stay out of config
	// files. The server inherits only a small set of variables from this
	// process (PATH, HOME, USER, locale, temp dir, proxies; see
	// InheritedEnv), never API keys.
	Env map[string]string
	// Dir is the server's working directory (default: this process's).
	Dir string
	// Confine, when set, checks every path-like argument of a call (see
	// confined) before the call is sent; a refusal comes back to the model
	// as an error result and the server never sees the call. Sessions set
	// it to their workspace's Resolve.
	Confine func(path string) error
	// Sandbox, when set, confines a stdio server like every other process
	// a session starts (it runs through the command supervisor).
	Sandbox *sandbox.Policy
	// Stderr, if set, receives the server's standard error. The last lines
	// are kept regardless, to explain why a server stopped.
	Stderr io.Writer

	// URL is a streamable HTTP endpoint (or an SSE endpoint, see
	// Transport); Headers are sent with every request (values may refer
	// to the environment as ${NAME}).
	URL     string
	Headers map[string]string
	// Transport is how URL is spoken: TransportStreamable, TransportSSE
	// (the 2024-11-05 HTTP+SSE transport), or empty: streamable HTTP,
	// falling back to SSE when the server answers the first POST with a
	// 4xx status, as the MCP specification's compatibility rules say.
	Transport string
	// BearerTokenEnv names an environment variable holding a token sent
	// as "Authorization: Bearer <token>", read at every (re)connect.
	BearerTokenEnv string
	// OAuth, when set, sends OAuth access tokens that a person obtained
	// with Login (agentloop mcp login NAME), refreshing them; see OAuth.
	OAuth *OAuth
	// HTTPClient replaces http.DefaultClient's transport for URL servers.
	HTTPClient *http.Client

	// Dial opens a transport to the server, instead of Command or URL
	// (in-memory servers, embedding). It is called again to reconnect.
	Dial func(ctx context.Context) (sdk.Transport, error)

	// Prefix goes before each tool name. Empty means Name + "__"; set
	// NoPrefix to expose the server's tool names as they are.
	Prefix   string
	NoPrefix bool
	// Tools, if not empty, limits the exposed tools to these (the server's
	// own names, without prefix).
	Tools []string

	// Effect classifies the server's tools for approval policies. Empty
	// means: read for tools annotated readOnlyHint, execute for the rest.
	// When set, it applies to every tool regardless of annotations.
	Effect tool.Effect
	// ToolEffects overrides Effect per tool (the server's own names).
	ToolEffects map[string]tool.Effect

	// Reconnects is how many times a server that stopped is started
	// again, on the next call after it stopped, over this Server's
	// lifetime. Zero means 1; negative means never.
	Reconnects int
	// ConnectTimeout bounds starting the server and listing its tools
	// when ctx has no earlier deadline (default 30s).
	ConnectTimeout time.Duration
	// ShutdownTimeout is how long Close waits for a stdio server to exit
	// after closing its stdin before signalling it (default 2s).
	ShutdownTimeout time.Duration
	// MaxOutputBytes caps the text of one result; the middle of a longer
	// one is cut (default 64 KiB).
	MaxOutputBytes int
	// MaxImageBytes caps one image passed on to the model; a larger one
	// is only described in the text (default 5 MiB). Negative passes no
	// images at all.
	MaxImageBytes int
	// Logger receives the SDK's diagnostics (default: discarded).
	Logger *slog.Logger
}

// Defaults.
const (
	DefaultConnectTimeout  = 30 * time.Second
	DefaultShutdownTimeout = 2 * time.Second
	DefaultMaxOutputBytes  = 64 << 10
	DefaultMaxImageBytes   = 5 << 20
)

// Transports of a URL server (ServerConfig.Transport).
const (
	TransportStreamable = "streamable"
	TransportSSE        = "sse"
)

// InheritedEnv lists the variables a stdio server inherits from this
// process. Everything else must be given in ServerConfig.Env.
var InheritedEnv = []string{
	"HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "LC_ALL", "LC_CTYPE", "TMPDIR", "TZ",
	"XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME", "XDG_RUNTIME_DIR",
	"HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy",
	// Windows
	"APPDATA", "HOMEDRIVE", "HOMEPATH", "LOCALAPPDATA", "PROGRAMFILES", "SYSTEMDRIVE", "SYSTEMROOT", "TEMP", "TMP", "USERNAME", "USERPROFILE", "COMSPEC", "PATHEXT",
}

// ErrClosed is returned (wrapped) by calls to a Server after Close.
var ErrClosed = errors.New("MCP server is closed")

// Server is a connected MCP server and the tools it offers.
// It is safe for concurrent use.
type Server struct {
	cfg    ServerConfig
	client *sdk.Client
	tools  []tool.Tool
	warn   []string

	// base is cancelled by Close, ending calls still in flight.
	base   context.Context
	cancel context.CancelFunc

	mu         sync.Mutex
	conn       *conn  // nil when down
	down       string // why the server is down, when conn is nil
	reconnects int    // automatic reconnects left
	closed     bool
	// spoken is the transport a URL server last answered on, so a
	// reconnect does not try streamable HTTP again on an SSE server. Only
	// dial touches it, at Connect or under mu.
	spoken string
}

// Connect starts (or reaches) the server, initialises an MCP session and
// lists its tools.
func Connect(ctx context.Context, cfg ServerConfig) (*Server, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if cfg.ConnectTimeout <= 0 {
		cfg.ConnectTimeout = DefaultConnectTimeout
	}
	if cfg.ShutdownTimeout <= 0 {
		cfg.ShutdownTimeout = DefaultShutdownTimeout
	}
	if cfg.MaxOutputBytes <= 0 {
		cfg.MaxOutputBytes = DefaultMaxOutputBytes
	}
	if cfg.MaxImageBytes == 0 {
		cfg.MaxImageBytes = DefaultMaxImageBytes
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{
		cfg:        cfg,
		client:     sdk.NewClient(&sdk.Implementation{Name: "agentloop", Version: "1"}, &sdk.ClientOptions{Logger: logger}),
		reconnects: cfg.Reconnects,
	}
	if s.reconnects == 0 {
		s.reconnects = 1
	}
	s.base, s.cancel = context.WithCancel(context.Background())

	c, err := s.dial(ctx)
	if err != nil {
		s.cancel()
		return nil, err
	}
	remote, err := c.listTools(ctx, s.cfg.ConnectTimeout)
	if err != nil {
		c.close(s.cfg.ShutdownTimeout)
		s.cancel()
		return nil, fmt.Errorf("MCP server %q: listing its tools: %w%s", cfg.Name, err, c.stderrNote())
	}
	s.conn = c
	s.tools, s.warn = s.buildTools(remote)
	return s, nil
}

func (cfg *ServerConfig) validate() error {
	if cfg.Name == "" {
		return errors.New("MCP server: the name is empty; give every server a name")
	}
	n := 0
	for _, set := range []bool{cfg.Command != "", cfg.URL != "", cfg.Dial != nil} {
		if set {
			n++
		}
	}
	switch {
	case n == 0:
		return fmt.Errorf("MCP server %q: set either a command (stdio server) or a url (streamable HTTP server)", cfg.Name)
	case n > 1:
		return fmt.Errorf("MCP server %q: set only one of command and url", cfg.Name)
	}
	if cfg.URL != "" {
		u, err := url.Parse(cfg.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("MCP server %q: url %q is not an http:// or https:// URL", cfg.Name, cfg.URL)
		}
	}
	switch cfg.Transport {
	case "", TransportStreamable, TransportSSE:
	default:
		return fmt.Errorf("MCP server %q: transport %q: use %s or %s (or leave it empty to try streamable HTTP, then SSE)", cfg.Name, cfg.Transport, TransportStreamable, TransportSSE)
	}
	if (cfg.Transport != "" || cfg.BearerTokenEnv != "") && cfg.URL == "" {
		return fmt.Errorf("MCP server %q: transport and bearer_token_env are for servers reached by url", cfg.Name)
	}
	for k := range cfg.Headers {
		if cfg.BearerTokenEnv != "" && strings.EqualFold(k, "Authorization") {
			return fmt.Errorf("MCP server %q: set either an Authorization header or bearer_token_env, not both", cfg.Name)
		}
	}
	if err := cfg.validateOAuth(); err != nil {
		return err
	}
	for name, e := range cfg.ToolEffects {
		if !validEffect(e) {
			return fmt.Errorf("MCP server %q: tool %q: effect %q: use read, write or execute", cfg.Name, name, e)
		}
	}
	if cfg.Effect != "" && !validEffect(cfg.Effect) {
		return fmt.Errorf("MCP server %q: effect %q: use read, write or execute", cfg.Name, cfg.Effect)
	}
	return nil
}

func validEffect(e tool.Effect) bool {
	return e == tool.EffectRead || e == tool.EffectWrite || e == tool.EffectExecute
}

// Name is the server's configured name.
func (s *Server) Name() string { return s.cfg.Name }

// Tools returns the server's tools, ready for tool.NewRegistry.
func (s *Server) Tools() []tool.Tool { return append([]tool.Tool(nil), s.tools...) }

// Warnings lists what was adjusted while importing the tools: renamed
// tools, schemas that had to be replaced, unknown names in Tools.
func (s *Server) Warnings() []string { return append([]string(nil), s.warn...) }

// Close ends calls in flight, closes the session and shuts the server
// down: a stdio server gets its stdin closed, then SIGTERM, then SIGKILL
// (its whole process group). Close is idempotent.
func (s *Server) Close() error {
	s.cancel() // ends calls in flight and a reconnect in progress
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	c := s.conn
	s.conn = nil
	s.down = "closed"
	s.mu.Unlock()
	if c != nil {
		c.close(s.cfg.ShutdownTimeout)
	}
	return nil
}

// Servers are several connected MCP servers.
type Servers []*Server

// ConnectAll connects to every server in order. If one fails, those
// already connected are closed and the error names the failing one.
func ConnectAll(ctx context.Context, cfgs []ServerConfig) (Servers, error) {
	var out Servers
	for _, cfg := range cfgs {
		s, err := Connect(ctx, cfg)
		if err != nil {
			_ = out.Close()
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// Tools returns the tools of every server, in server order.
func (ss Servers) Tools() []tool.Tool {
	var out []tool.Tool
	for _, s := range ss {
		out = append(out, s.Tools()...)
	}
	return out
}

// Close closes every server.
func (ss Servers) Close() error {
	var errs []error
	for _, s := range ss {
		errs = append(errs, s.Close())
	}
	return errors.Join(errs...)
}

// dial opens a new connection: starts the process or reaches the URL and
// initialises the MCP session.
func (s *Server) dial(ctx context.Context) (*conn, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.ConnectTimeout)
	defer cancel()
	c := &conn{name: s.cfg.Name, done: make(chan struct{})}
	var transport sdk.Transport
	switch {
	case s.cfg.Dial != nil:
		t, err := s.cfg.Dial(ctx)
		if err != nil {
			return nil, fmt.Errorf("MCP server %q: %w", s.cfg.Name, err)
		}
		transport = t
	case s.cfg.Command != "":
		cmd, tail, err := s.command()
		if err != nil {
			return nil, err
		}
		c.cmd, c.stderr = cmd, tail
		transport = &sdk.CommandTransport{Command: cmd, TerminateDuration: s.cfg.ShutdownTimeout}
	default:
		return s.dialURL(ctx, c)
	}
	sess, err := s.client.Connect(ctx, transport, nil)
	if err != nil {
		what := "starting it"
		if c.url != "" {
			what = "connecting to " + c.url
		} else if c.cmd != nil {
			what = "starting " + quoteCommand(c.cmd.Args)
		}
		if c.cmd != nil {
			c.killGroup()
		}
		return nil, fmt.Errorf("MCP server %q: %s: %w%s%s", s.cfg.Name, what, err, c.exitNote(), c.stderrNote())
	}
	return c.attach(sess), nil
}

func (s *Server) command() (*exec.Cmd, *tailBuffer, error) {
	env, err := s.environment()
	if err != nil {
		return nil, nil, err
	}
	cmd := exec.Command(s.cfg.Command, s.cfg.Args...)
	if s.cfg.Sandbox != nil && s.cfg.Sandbox.Confined() {
		// The supervisor resolves the command on PATH, inside the sandbox.
		if cmd, err = shell.Command(s.cfg.Sandbox, nil, append([]string{s.cfg.Command}, s.cfg.Args...)...); err != nil {
			return nil, nil, err
		}
	}
	cmd.Env = env
	cmd.Dir = s.cfg.Dir
	tail := &tailBuffer{max: 4 << 10}
	if s.cfg.Stderr != nil {
		cmd.Stderr = io.MultiWriter(tail, s.cfg.Stderr)
	} else {
		cmd.Stderr = tail
	}
	// A grandchild holding stderr open must not keep Wait from returning.
	cmd.WaitDelay = time.Second
	setProcessGroup(cmd)
	if s.cfg.Sandbox != nil && s.cfg.Sandbox.Confined() {
		cmd.Env = append(cmd.Env, sandbox.EnvVar+"="+s.cfg.Sandbox.Encode())
		cmd.SysProcAttr = shell.SysProcAttr() // its own group, and Pdeathsig
	}
	return cmd, tail, nil
}

func (s *Server) environment() ([]string, error) {
	var env []string
	for _, k := range InheritedEnv {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	keys := make([]string, 0, len(s.cfg.Env))
	for k := range s.cfg.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v, err := expandEnv(s.cfg.Env[k])
		if err != nil {
			return nil, fmt.Errorf("MCP server %q: env %s: %w", s.cfg.Name, k, err)
		}
		env = append(env, k+"="+v)
	}
	return env, nil
}

func (s *Server) httpClient() (*http.Client, error) {
	base := http.DefaultTransport
	client := &http.Client{}
	if s.cfg.HTTPClient != nil {
		*client = *s.cfg.HTTPClient
		if client.Transport != nil {
			base = client.Transport
		}
	}
	headers := http.Header{}
	for k, v := range s.cfg.Headers {
		x, err := expandEnv(v)
		if err != nil {
			return nil, fmt.Errorf("MCP server %q: header %s: %w", s.cfg.Name, k, err)
		}
		headers.Set(k, x)
	}
	if len(headers) > 0 {
		client.Transport = headerTransport{base: base, headers: headers}
	}
	return withTraceContext(client), nil
}

type headerTransport struct {
	base    http.RoundTripper
	headers http.Header
}

func (t headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	for k, vs := range t.headers {
		req.Header[k] = vs
	}
	return t.base.RoundTrip(req)
}

var envRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// expandEnv replaces ${NAME} with the value of NAME. A variable that is
// not set is an error, so a missing token is reported at start rather
// than as an authentication failure later. "$$" is a literal "$".
func expandEnv(v string) (string, error) {
	var missing []string
	out := envRef.ReplaceAllStringFunc(v, func(m string) string {
		name := m[2 : len(m)-1]
		val, ok := os.LookupEnv(name)
		if !ok {
			missing = append(missing, name)
		}
		return val
	})
	if len(missing) > 0 {
		return "", fmt.Errorf("refers to $%s, which is not set in the environment", strings.Join(missing, ", $"))
	}
	return strings.ReplaceAll(out, "$$", "$"), nil
}

// live returns the connection for a call, restarting a stopped server
// when reconnects are left.
func (s *Server) live(ctx context.Context) (*conn, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, fmt.Errorf("%w: %q", ErrClosed, s.cfg.Name)
	}
	if s.conn != nil {
		if !s.conn.stopped() {
			return s.conn, nil
		}
		s.down = s.conn.reason()
		s.conn.close(s.cfg.ShutdownTimeout)
		s.conn = nil
	}
	if s.reconnects <= 0 {
		return nil, s.notRunning(s.down)
	}
	s.reconnects--
	ctx, stop := s.bind(ctx)
	defer stop()
	c, err := s.dial(ctx)
	if err != nil {
		if ctx.Err() != nil {
			s.reconnects++ // the caller gave up; it was not the server's fault
			return nil, ctx.Err()
		}
		s.down += "; restarting it failed: " + strings.TrimPrefix(err.Error(), fmt.Sprintf("MCP server %q: ", s.cfg.Name))
		return nil, s.notRunning(s.down)
	}
	s.conn = c
	return c, nil
}

// bind returns ctx, also cancelled when the server is closed.
func (s *Server) bind(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(ctx)
	stop := context.AfterFunc(s.base, func() { cancel(fmt.Errorf("%w: %q", ErrClosed, s.cfg.Name)) })
	return ctx, func() { stop(); cancel(nil) }
}

// lost records that c stopped working during a call and returns the error
// for the model.
func (s *Server) lost(c *conn, cause error) error {
	if c.url == "" {
		// A process that died is reaped shortly after its output ends.
		c.settle(3 * time.Second)
	}
	reason := c.reason()
	if !c.stopped() {
		reason = "connection lost: " + cause.Error()
	}
	s.mu.Lock()
	if s.conn == c {
		s.conn = nil
		s.down = reason
	}
	s.mu.Unlock()
	go c.close(s.cfg.ShutdownTimeout)
	return s.notRunning(reason)
}

func (s *Server) notRunning(reason string) error {
	if s.cfg.URL != "" {
		return fmt.Errorf("MCP server %q is not reachable at %s (%s); its tools are unavailable", s.cfg.Name, s.cfg.URL, reason)
	}
	return fmt.Errorf("MCP server %q is not running (%s); its tools are unavailable", s.cfg.Name, reason)
}

// conn is one MCP session with the server (one process, for stdio).
type conn struct {
	name   string
	sess   *sdk.ClientSession
	cmd    *exec.Cmd
	url    string
	stderr *tailBuffer
	done   chan struct{} // closed when the session has ended
	once   sync.Once
}

func (c *conn) listTools(ctx context.Context, timeout time.Duration) ([]*sdk.Tool, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var out []*sdk.Tool
	for t, err := range c.sess.Tools(ctx, nil) {
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

func (c *conn) stopped() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// settle waits a little for the session to notice that it ended.
func (c *conn) settle(d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-c.done:
	case <-t.C:
	}
}

// reason says why the connection ended, once it has.
func (c *conn) reason() string {
	if c.cmd != nil && c.stopped() {
		if st := c.cmd.ProcessState; st != nil {
			return "exited: " + st.String() + c.lastStderr()
		}
		return "exited" + c.lastStderr()
	}
	if c.stopped() {
		return "the connection was closed"
	}
	return "not answering"
}

func (c *conn) lastStderr() string {
	if c.stderr == nil {
		return ""
	}
	if line := c.stderr.lastLine(); line != "" {
		return "; last error output: " + line
	}
	return ""
}

func (c *conn) exitNote() string {
	if c.cmd == nil || c.cmd.ProcessState == nil {
		return ""
	}
	return " (exited: " + c.cmd.ProcessState.String() + ")"
}

func (c *conn) stderrNote() string {
	if c.stderr == nil {
		return ""
	}
	if s := strings.TrimSpace(c.stderr.String()); s != "" {
		return "\nits error output ends with:\n" + s
	}
	return ""
}

// close ends the session; for a stdio server, the SDK closes stdin, waits,
// then sends SIGTERM and SIGKILL. Whatever is left of its process group
// is killed afterwards.
func (c *conn) close(grace time.Duration) {
	c.once.Do(func() {
		if c.sess != nil {
			closed := make(chan struct{})
			go func() {
				_ = c.sess.Close()
				close(closed)
			}()
			t := time.NewTimer(3*grace + time.Second)
			select {
			case <-closed:
			case <-t.C:
				// The SDK is still waiting for something: kill the process
				// so the session ends.
				c.killGroup()
				<-closed
			}
			t.Stop()
		}
		c.killGroup()
	})
}

func (c *conn) killGroup() {
	if c.cmd != nil && c.cmd.Process != nil {
		killProcessGroup(c.cmd)
	}
}

func quoteCommand(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		if a == "" || strings.ContainsAny(a, " \t\"'") {
			a = fmt.Sprintf("%q", a)
		}
		q[i] = a
	}
	return strings.Join(q, " ")
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if over := len(b.buf) - b.max; over > 0 {
		b.buf = append(b.buf[:0], b.buf[over:]...)
	}
	return len(p), nil
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}

func (b *tailBuffer) lastLine() string {
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	line := strings.TrimSpace(lines[len(lines)-1])
	if len(line) > 200 {
		line = line[:197] + "..."
	}
	return line
}
