package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/agentloop/agentloop/assemble"
	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/mcpserver"
	"github.com/agentloop/agentloop/sandbox"
	"github.com/agentloop/agentloop/service"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// cmdMCP serves the sessions as an MCP server on stdin/stdout, for an MCP
// client that starts it (Claude Desktop, an IDE, another agent). Sessions
// run in this process, recorded in the local database like `agentloop
// run`'s; when the client goes away they pause (reason shutdown) at a safe
// point, and resume_session (or agentloop sessions resume) continues them.
// With --server it relays to that server's /mcp instead.
func cmdMCP(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		if sub, ok := mcpAccountCommands[args[0]]; ok { // login, logout, status: mcp_login.go
			return sub(args[1:], stdout, stderr)
		}
	}
	fs := flag.NewFlagSet("mcp", flag.ContinueOnError)
	fs.SetOutput(stderr)
	db := dbFlag(fs)
	dir := fs.String("dir", ".", "the sessions' workspace; a start request's workspace is a directory inside it")
	modelSpec := fs.String("model", os.Getenv("AGENTLOOP_MODEL"), "default model of sessions that name none (PROVIDER/NAME; default ollama/qwen3:8b)")
	baseURL := fs.String("base-url", "", "the default model's base URL")
	apiKey := fs.String("api-key", "", "the model API key (default: the provider's environment variable)")
	configPath := fs.String("config", "", "config file with agent profiles (default $AGENTLOOP_CONFIG or ~/.config/agentloop/config.yaml)")
	profile := fs.String("profile", "", "default agent profile of sessions")
	yes := fs.Bool("yes", false, "let start requests ask for approval \"auto\" (tools run without asking); without it writing and executing tools wait for decide_approval")
	allowScripts := fs.Bool("allow-script-models", false, "let start requests name scripted models and protocol files (script:PATH); for tests and demos")
	maxIterations := fs.Int("max-iterations", 0, fmt.Sprintf("default step limit of sessions (default %d)", loop.DefaultMaxIterations))
	grace := fs.Duration("grace", 30*time.Second, "when the client goes away, how long running sessions get to pause at a safe point")
	server := serverFlag(fs)
	var sb sandboxFlags
	sb.register(fs, "full")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: agentloop mcp [flags]\n\nServes agentloop's sessions over the Model Context Protocol on stdin/stdout: tools to start,")
		fmt.Fprintln(stderr, "get, wait for, list, reply to, pause, resume and terminate sessions and decide approvals;")
		fmt.Fprintln(stderr, "session logs as resources (agentloop://sessions/{id}/events). With --server, relays to that server's /mcp.\n\nFlags:")
		fs.PrintDefaults()
		fmt.Fprintln(stderr, "\nIn an MCP client's config: {\"command\": \"agentloop\", \"args\": [\"mcp\", \"--dir\", \"/path/to/project\"]}")
		fmt.Fprintln(stderr, "\nRemote MCP servers that sessions use and that need an OAuth login (oauth: in the config file):")
		fmt.Fprintln(stderr, "  agentloop mcp login NAME    log in: open the printed URL, the tokens are stored and refreshed")
		fmt.Fprintln(stderr, "  agentloop mcp logout NAME   forget the server's stored tokens")
		fmt.Fprintln(stderr, "  agentloop mcp status        which servers are logged in, and when their tokens expire (--json)")
	}
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "agentloop mcp: unexpected arguments %q (it speaks MCP on stdin/stdout; its subcommands are login, logout and status)\n", fs.Args())
		return exitUsage
	}
	if *server != "" {
		return relayMCP(strings.TrimRight(*server, "/")+"/mcp", os.Getenv("AGENTLOOP_KEY"), os.Stdin, stdout, stderr)
	}
	if *maxIterations < 0 {
		fmt.Fprintln(stderr, "agentloop mcp: --max-iterations cannot be negative")
		return exitUsage
	}
	root, err := filepath.Abs(*dir)
	if err != nil {
		return fail(stderr, "%v", err)
	}
	if info, err := os.Stat(root); err != nil || !info.IsDir() {
		fmt.Fprintf(stderr, "agentloop mcp: --dir %s is not a directory\n", *dir)
		return exitUsage
	}
	sandboxing, err := sb.sandboxing(portOf(*db))
	if err != nil {
		fmt.Fprintf(stderr, "agentloop mcp: %v\n", err)
		return exitUsage
	}
	var o sessionFlags
	o.configPath, o.agent = *configPath, *profile
	cfgFile, prof, err := o.loadConfig()
	if err != nil {
		return fail(stderr, "%v", err)
	}
	var fallbacks []string
	profName := ""
	if prof != nil {
		profName = prof.Name
		if *modelSpec == "" {
			*modelSpec, fallbacks = prof.Model, prof.FallbackModels
		}
	}
	prices, err := assemble.Prices(configPrices(cfgFile))
	if err != nil {
		return fail(stderr, "%v", err)
	}
	st, err := assemble.OpenStore(*db)
	if err != nil {
		return fail(stderr, "%v", err)
	}
	defer st.Close()
	tel, doneObserving, err := observe(st, false, stderr)
	if err != nil {
		return fail(stderr, "%v", err)
	}
	defer doneObserving()
	log := slog.New(slog.NewTextHandler(stderr, nil))
	resolver := &assemble.Resolver{Config: cfgFile, APIKey: *apiKey, BaseURL: *baseURL, Sandbox: sandboxing}
	sessionsCtx, stopSessions := context.WithCancelCause(context.Background())
	defer stopSessions(nil)
	rc := resolver.RunnerConfig(st, prices)
	rc.Resolve = tel.Resolver(rc.Resolve) // model calls join the session's trace
	svc, err := service.New(service.Config{Store: st, Runner: rc, Context: sessionsCtx, TakeOverControls: true, PrivateDirs: sandbox.DefaultPrivateBase(),
		OnFailed: func(id string, err error) {
			if !errors.Is(err, context.Canceled) {
				log.Error("session stopped: its events could not be saved", "session_id", id, "err", err)
			}
		}})
	if err != nil {
		return fail(stderr, "%v", err)
	}
	defer svc.Close()
	approval := "ask"
	if *yes {
		approval = "auto"
	}
	local := mcpserver.Local{Service: svc, Dir: root, RunUnasked: *yes, Defaults: assemble.StartDefaults{Model: *modelSpec, FallbackModels: fallbacks,
		Endpoint: assemble.RedactURL(*baseURL), Profile: profName, Approval: approval, MaxIterations: *maxIterations, AllowFiles: *allowScripts}}
	caller := localCaller()
	srv := mcpserver.New(mcpserver.Config{Service: svc, Start: local.Start, Version: version,
		Caller: func(context.Context, *mcp.RequestExtra) (service.Caller, error) { return caller, nil }})
	fmt.Fprintf(stderr, "agentloop mcp: serving MCP on stdin/stdout (database %s, workspace %s)\n", assemble.DescribeDB(*db), root)
	// An MCP client stops its server by closing stdin, then with SIGTERM,
	// or with both at once. The signals stay caught until the process
	// exits (stop is never called): a SIGTERM still on its way when stdin
	// ended the run would otherwise kill the process in its shutdown,
	// before the store is closed.
	runCtx, _ := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	runErr := srv.Run(runCtx, &mcp.IOTransport{Reader: os.Stdin, Writer: nopCloser{stdout}})
	// Signals no longer stop a shutdown stuck past its grace (a database
	// that stopped answering): this does.
	time.AfterFunc(*grace+30*time.Second, func() {
		fmt.Fprintf(stderr, "agentloop mcp: shutting down took more than --grace (%v) and 30 s: exiting without closing the session database\n", *grace)
		os.Exit(1)
	})
	// The client went away or stopped this: sessions pause at a safe
	// point, to be resumed.
	stopSessions(loop.ErrShutdown)
	gctx, cancel := context.WithTimeout(context.Background(), *grace)
	defer cancel()
	if err := svc.Wait(gctx); err != nil {
		log.Warn("sessions still running at the end of the grace period; agentloop sessions recover resumes them", "err", err)
	}
	if runErr != nil && runCtx.Err() == nil && !errors.Is(runErr, io.EOF) && !strings.Contains(runErr.Error(), "EOF") {
		return fail(stderr, "mcp: %v", runErr)
	}
	return 0
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

// relayMCP relays MCP messages from in (one JSON-RPC message a line) to a
// server's /mcp and its answers to out, each request in its own exchange
// (the server's /mcp is stateless), so a long wait_session does not hold
// up other calls. A refused exchange (no key, a revoked one, the server
// down) is a JSON-RPC error answering the request it carried.
func relayMCP(endpoint, key string, in io.Reader, out, stderr io.Writer) int {
	var mu sync.Mutex
	write := func(b []byte) {
		mu.Lock()
		defer mu.Unlock()
		out.Write(append(bytes.TrimSpace(b), '\n'))
	}
	var wg sync.WaitGroup
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		msg := bytes.TrimSpace(sc.Bytes())
		if len(msg) == 0 {
			continue
		}
		msg = append([]byte(nil), msg...)
		wg.Add(1)
		go func() {
			defer wg.Done()
			var head struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
			}
			_ = json.Unmarshal(msg, &head)
			answer, err := relayOne(endpoint, key, msg)
			if err != nil {
				if len(head.ID) == 0 || head.Method == "" { // a notification or a response: nobody waits for an answer
					fmt.Fprintf(stderr, "agentloop mcp: %v\n", err)
					return
				}
				b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": head.ID, "error": map[string]any{"code": -32603, "message": err.Error()}})
				write(b)
				return
			}
			if len(answer) > 0 {
				write(answer)
			}
		}()
	}
	wg.Wait()
	if err := sc.Err(); err != nil {
		return fail(stderr, "reading stdin: %v", err)
	}
	return 0
}

func relayOne(endpoint, key string, msg []byte) ([]byte, error) {
	req, err := http.NewRequest(http.MethodPost, endpoint, bytes.NewReader(msg))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s: %v (is agentloop serve running there?)", endpoint, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		var p struct{ Detail string }
		if json.Unmarshal(body, &p) == nil && p.Detail != "" {
			return nil, fmt.Errorf("%s: %s (HTTP %d)", endpoint, p.Detail, resp.StatusCode)
		}
		return nil, fmt.Errorf("%s: HTTP %d: %s", endpoint, resp.StatusCode, bytes.TrimSpace(body))
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		// One exchange's events: the data lines are its messages.
		var msgs [][]byte
		for _, line := range bytes.Split(body, []byte("\n")) {
			if d, ok := bytes.CutPrefix(line, []byte("data:")); ok && len(bytes.TrimSpace(d)) > 0 {
				msgs = append(msgs, bytes.TrimSpace(d))
			}
		}
		return bytes.Join(msgs, []byte("\n")), nil
	}
	return body, nil
}
