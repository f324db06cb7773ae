package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/agentloop/agentloop/assemble"
	"github.com/agentloop/agentloop/config"
	"github.com/agentloop/agentloop/feed"
	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/model"
	"github.com/agentloop/agentloop/notify"
	"github.com/agentloop/agentloop/sandbox"
	"github.com/agentloop/agentloop/server"
	"github.com/agentloop/agentloop/service"
	"github.com/agentloop/agentloop/store"
	"github.com/agentloop/agentloop/temporal"
	"github.com/agentloop/agentloop/web"
	"go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"
)

// cmdServe runs the HTTP API until SIGTERM or Ctrl-C.
func cmdServe(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:7420", "address to listen on; anything but loopback requires --auth keys")
	db := dbFlag(fs)
	modelSpec := fs.String("model", os.Getenv("AGENTLOOP_MODEL"), "default model of sessions that name none (PROVIDER/NAME; default ollama/qwen3:8b)")
	baseURL := fs.String("base-url", "", "the default model's base URL")
	apiKey := fs.String("api-key", "", "the model API key (default: the provider's environment variable)")
	configPath := fs.String("config", "", "config file with agent profiles (default $AGENTLOOP_CONFIG or ~/.config/agentloop/config.yaml)")
	profile := fs.String("profile", "", "default agent profile of sessions")
	authMode := fs.String("auth", "", "none (every request is the local admin; loopback only) or keys (Authorization: Bearer KEY); default none on loopback")
	workspaces := fs.String("workspaces", defaultWorkspaces(), "directory the sessions' workspaces live in")
	yes := fs.Bool("yes", false, "sessions run tools without asking by default (else writing tools wait for an approval over the API)")
	allowScripts := fs.Bool("allow-script-models", false, "let requests name scripted models and protocol files (script:PATH: a file of this machine); for tests and local demos")
	var allowedOrigins stringList
	fs.Var(&allowedOrigins, "allowed-origins", "another origin (scheme://host[:port]) whose pages may call the API from a browser; comma-separated or repeated (the dashboard's own origin needs nothing)")
	publicURL := fs.String("public-url", "", "with --auth keys: the URL clients reach this server at; only its host (and loopback) is answered")
	grace := fs.Duration("grace", 30*time.Second, "on SIGTERM, how long running sessions get to pause at a safe point")
	logFlags := registerLogFlags(fs)
	demo := fs.Bool("demo", false, "start a demo session (a scripted model in a throwaway workspace) and print where to watch it")
	rateLimit := fs.Float64("rate-limit", 20, "requests a second each API key may make on average (0: no limit); over it, 429 with Retry-After")
	rateBurst := fs.Int("rate-burst", 60, "requests an API key may make at once before --rate-limit applies")
	quotaRunning := fs.Int("quota-running", 0, "most sessions one tenant may run at once (0: no limit)")
	quotaTokens := fs.Int("quota-tokens-day", 0, "most tokens one tenant's sessions may use in 24 hours (0: no limit)")
	quotaUSD := fs.Float64("quota-usd-day", 0, "most US dollars one tenant's sessions may cost in 24 hours (0: no limit)")
	engineName := fs.String("engine", "local", "where sessions run: local (in this server) or temporal (as Temporal workflows, run by agentloop worker; needs --temporal and a PostgreSQL --db)")
	temporalAddr := fs.String("temporal", os.Getenv("AGENTLOOP_TEMPORAL"), "with --engine temporal: the Temporal frontend, HOST:PORT ($AGENTLOOP_TEMPORAL)")
	namespace := fs.String("namespace", "default", "with --engine temporal: the Temporal namespace")
	taskQueue := fs.String("task-queue", temporal.DefaultTaskQueue, "with --engine temporal: the task queue the workers poll")
	var sb sandboxFlags
	sb.register(fs, "none") // tenants opt in per profile
	fs.BoolVar(&sb.unsafe, "unsafe-no-sandbox", os.Getenv("AGENTLOOP_UNSAFE_NO_SANDBOX") == "1", "with --auth keys, allow --sandbox none: every tenant's commands then run as this server's user, and can read its database, keys and other tenants' workspaces ($AGENTLOOP_UNSAFE_NO_SANDBOX=1)")
	webhook := fs.String("webhook", "", "POST signed notifications of every tenant's sessions (waiting, paused, ended) to this URL; the secret comes from --webhook-secret-file or $AGENTLOOP_WEBHOOK_SECRET")
	webhookSecretFile := fs.String("webhook-secret-file", "", "file holding the secret that signs notifications (HMAC-SHA256): --webhook's and sessions' own notify URLs ($AGENTLOOP_WEBHOOK_SECRET otherwise)")
	webhookPrivate := fs.Bool("webhook-allow-private", false, "let webhooks reach loopback and private addresses (local use and tests)")
	webhookBackoff := fs.Duration("webhook-backoff", 5*time.Second, "delay before a failed notification is tried again; it doubles after each failure, up to an hour")
	checkpointsDir := checkpointsFlag(fs)
	leaseTTL := fs.Duration("lease-ttl", 30*time.Second, "how long a server's claim on a session lasts unrenewed: with several servers on one PostgreSQL database, how soon another takes over the sessions of one that died")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: agentloop serve [flags]\n\nServes the HTTP API (/v1): sessions, their live event streams (SSE) and controls.")
		fmt.Fprintln(stderr, "Sessions survive the server: they pause at SIGTERM and resume when it starts again.\n\nFlags:")
		fs.PrintDefaults()
		fmt.Fprintln(stderr, "\nExample:\n  agentloop serve &\n  curl -s localhost:7420/v1/sessions -d '{\"task\":\"say hello\",\"model\":\"ollama/qwen3:8b\"}'")
	}
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	logs, err := logFlags.open(stderr)
	if err != nil {
		fmt.Fprintf(stderr, "agentloop serve: %v\n", err)
		return exitUsage
	}
	// From here on, under --log-format json, what is written to stderr is
	// a JSON line: messages of failure at level ERROR, the others (info)
	// at INFO.
	log, stderr, info := logs.Logger, logs.errs, logs.info

	loopback := isLoopback(*addr)
	switch *authMode {
	case "":
		if !loopback {
			*authMode = "keys"
		} else {
			*authMode = "none"
		}
	case "none":
		if !loopback {
			fmt.Fprintf(stderr, "agentloop serve: --addr %s is reachable from other machines: use --auth keys (create keys with agentloop keys create)\n", *addr)
			return exitUsage
		}
	case "keys":
	default:
		fmt.Fprintln(stderr, "agentloop serve: --auth is none or keys")
		return exitUsage
	}
	sandboxing, err := sb.sandboxing(portOf(*addr), portOf(*db))
	if err != nil {
		fmt.Fprintf(stderr, "agentloop serve: %v\n", err)
		return exitUsage
	}
	if sandboxing.Policy.Backend == sandbox.Landlock && sandbox.LandlockABI() < 9 && postgresOverSocket(*db) && !sb.unsafe {
		fmt.Fprintf(stderr, "agentloop serve: the database is reached through a UNIX socket, and Landlock before ABI 9 (this kernel has %d) cannot keep sandboxed commands from connecting to it: "+
			"use --sandbox bwrap (it does not show the socket), reach PostgreSQL over TCP (host=127.0.0.1), or pass --unsafe-no-sandbox if every key holder may use the database\n", sandbox.LandlockABI())
		return exitUsage
	}
	if *authMode == "keys" && !sandboxing.Policy.Confined() && !sb.unsafe {
		fmt.Fprintln(stderr, "agentloop serve: --auth keys with --sandbox none: a tenant's command could read the session database, write a new admin key into it, read other tenants' workspaces and kill this server, so tenants, keys and roles would protect nothing; use --sandbox landlock or bwrap (agentloop doctor says which work here), or pass --unsafe-no-sandbox if every key holder is trusted with this machine")
		return exitUsage
	}
	var origins []string
	for _, list := range allowedOrigins {
		for _, o := range strings.Split(list, ",") {
			origin, err := server.ParseOrigin(o)
			if err != nil {
				fmt.Fprintf(stderr, "agentloop serve: --allowed-origins: %v\n", err)
				return exitUsage
			}
			origins = append(origins, origin)
		}
	}
	if *publicURL != "" {
		if u, err := url.Parse(*publicURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			fmt.Fprintf(stderr, "agentloop serve: --public-url %q: give scheme://host[:port], e.g. https://agents.example.com\n", *publicURL)
			return exitUsage
		}
		if *authMode != "keys" {
			fmt.Fprintln(stderr, "agentloop serve: --public-url needs --auth keys: a server without keys answers only loopback names")
			return exitUsage
		}
	}
	var o sessionFlags
	o.configPath, o.agent = *configPath, *profile
	cfgFile, prof, err := o.loadConfig()
	if err != nil {
		return fail(stderr, "%v", err)
	}
	var fallbacks []string
	if prof != nil && *modelSpec == "" {
		*modelSpec, fallbacks = prof.Model, prof.FallbackModels
	}
	prices, err := assemble.Prices(configPrices(cfgFile))
	if err != nil {
		return fail(stderr, "%v", err)
	}
	if *workspaces, err = filepath.Abs(*workspaces); err != nil {
		return fail(stderr, "%v", err)
	}
	if err := os.MkdirAll(*workspaces, 0o700); err != nil {
		return fail(stderr, "workspaces directory %s: %v", *workspaces, err)
	}
	switch *engineName {
	case "local":
	case "temporal":
		if *temporalAddr == "" {
			fmt.Fprintln(stderr, "agentloop serve: --engine temporal needs --temporal HOST:PORT (e.g. 127.0.0.1:7233 for `temporal server start-dev`)")
			return exitUsage
		}
		if !assemble.IsPostgres(*db) {
			fmt.Fprintln(stderr, "agentloop serve: --engine temporal needs a PostgreSQL --db (postgres://…): the workers write the events, and PostgreSQL tells this server of them as they happen")
			return exitUsage
		}
	default:
		fmt.Fprintln(stderr, "agentloop serve: --engine is local or temporal")
		return exitUsage
	}
	st, err := assemble.OpenStore(*db)
	if err != nil {
		return fail(stderr, "%v", err)
	}
	defer st.Close()
	tel, doneObserving, err := observe(st, true, stderr)
	if err != nil {
		return fail(stderr, "%v", err)
	}
	logs.tel.Store(tel)
	defer doneObserving() // after svc.Close: the sessions' last events are measured
	var engine service.Engine
	if *engineName == "temporal" {
		tc, err := client.Dial(client.Options{HostPort: *temporalAddr, Namespace: *namespace, Logger: tlog.NewStructuredLogger(log)})
		if err != nil {
			return fail(stderr, "connecting to Temporal at %s: %v (is it running? `temporal server start-dev` starts one)", *temporalAddr, err)
		}
		defer tc.Close()
		engine = &temporal.Engine{Client: tc, TaskQueue: *taskQueue}
	}

	deltas := &feed.Deltas{}
	tracked := &server.Workspaces{}
	resolver := &assemble.Resolver{Config: cfgFile, APIKey: *apiKey, BaseURL: *baseURL, OnWorkspace: tracked.Track, Sandbox: sandboxing, Log: log}
	rc := resolver.RunnerConfig(st, prices)
	rc.Resolve = tel.Resolver(rc.Resolve) // model calls join the session's trace
	rc.OnDelta = func(id string, d model.Delta) { deltas.Publish(feed.Delta{SessionID: id, Delta: d}) }
	cps, err := openCheckpoints(*checkpointsDir, *db, info)
	if err != nil {
		fmt.Fprintf(stderr, "agentloop serve: %v\n", err)
		return exitUsage
	}
	if cps != nil {
		rc.Checkpoint = checkpointHook(cps, cfgFile) // forks and rewinds read them
	}
	sessionsCtx, stopSessions := context.WithCancelCause(context.Background())
	defer stopSessions(nil)
	svc, err := service.New(service.Config{Store: st, Runner: rc, Context: sessionsCtx, LeaseTTL: *leaseTTL, Engine: engine, TakeOverControls: true, Checkpoints: cps,
		PrivateDirs: sandbox.DefaultPrivateBase(),
		OnFailed: func(id string, err error) {
			if !errors.Is(err, context.Canceled) {
				log.Error("session stopped: it is taken up again once the fault clears (within --lease-ttl)", "session_id", id, "err", err)
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
	profName := ""
	if prof != nil {
		profName = prof.Name
	}
	var cmdUser sandbox.Policy // who sandboxed commands run as, when this server runs as root
	if os.Geteuid() == 0 && sandboxing.Policy.Confined() {
		cmdUser = sandboxing.Policy.WithDefaults()
		if dir := closedAbove(*workspaces); dir != "" && !set["workspaces"] {
			// The default under root's home cannot be reached by the
			// sandbox user: a system service's state goes to /var/lib.
			if err := makePassable(rootWorkspaces); err == nil && closedAbove(rootWorkspaces) == "" {
				fmt.Fprintf(info, "agentloop serve: running as root, sandboxed commands run as uid %d, who cannot reach %s: workspaces are in %s\n", cmdUser.UID, *workspaces, rootWorkspaces)
				*workspaces = rootWorkspaces
			}
		}
		if dir := closedAbove(*workspaces); dir != "" {
			return fail(stderr, "this server runs as root and sandboxed commands run as uid %d, who cannot pass through %s to reach the workspaces in %s: "+
				"use --workspaces somewhere they can reach (e.g. %s), or chmod o+x %s", cmdUser.UID, dir, *workspaces, rootWorkspaces, dir)
		}
	}
	cfg := server.Config{Service: svc, Keys: st, RequireKeys: *authMode == "keys", Deltas: deltas, Logger: log,
		Quotas:     server.Quotas{Running: *quotaRunning, TokensPerDay: *quotaTokens, USDPerDay: *quotaUSD},
		RateLimit:  server.RateLimit{Per: *rateLimit, Burst: *rateBurst},
		Workspaces: tracked,
		UI:         web.Handler(),
		Telemetry:  tel,
		Front:      server.FrontDoor{AllowedOrigins: origins, PublicURL: *publicURL},
		Defaults: server.Defaults{Model: *modelSpec, FallbackModels: fallbacks, Endpoint: assemble.RedactURL(*baseURL), Profile: profName, Approval: approval,
			Workspaces: *workspaces, AllowScripts: *allowScripts,
			CommandUID: cmdUser.UID, CommandGID: cmdUser.GID, Profiles: cfgFile.Profile}}
	cfg.Sandbox.Backend, cfg.Sandbox.Network = string(sandboxing.Policy.Backend), sandboxing.Policy.Network.String()
	if src, ok := st.(notify.Source); ok {
		secret, err := webhookSecret(*webhookSecretFile)
		if err != nil {
			return fail(stderr, "%v", err)
		}
		host, _ := os.Hostname()
		notifyCtx, stopNotify := context.WithCancel(context.Background())
		n, err := notify.New(notifyCtx, notify.Config{Store: src, Owner: fmt.Sprintf("%s:%d:%d", host, os.Getpid(), time.Now().UnixNano()),
			URL: *webhook, Secret: secret, AllowPrivate: *webhookPrivate, Backoff: *webhookBackoff, Logger: log})
		if err != nil {
			stopNotify()
			return fail(stderr, "notifications: %v", err)
		}
		notifying := make(chan struct{})
		go func() { n.Run(notifyCtx); close(notifying) }()
		defer func() { stopNotify(); <-notifying }() // the notifier stops before the store closes
		cfg.Notifier = n
	} else if *webhook != "" {
		return fail(stderr, "--webhook: the store %s keeps no webhooks; use SQLite or PostgreSQL", assemble.DescribeDB(*db))
	}
	if *demo {
		cfg.Demo = demoStarter(svc, *workspaces, cmdUser.UID, cmdUser.GID)
	}
	api := server.New(cfg)
	var ready atomic.Bool
	api.SetReady(ready.Load)

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fail(stderr, "listening on %s: %v (another agentloop serve running? pick another --addr)", *addr, err)
	}
	reqCtx, stopRequests := context.WithCancel(context.Background())
	defer stopRequests()
	// No WriteTimeout: event streams last as long as their sessions; a
	// stream's writes have their own deadline.
	srv := &http.Server{Handler: api, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: time.Minute, IdleTimeout: 2 * time.Minute,
		BaseContext: func(net.Listener) context.Context { return reqCtx }}
	fmt.Fprintf(info, "agentloop serve: listening on http://%s (auth %s, database %s)\n", ln.Addr(), *authMode, assemble.DescribeDB(*db))
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()

	recoverSessions(sessionsCtx, svc, log)
	// Sessions of a server that dies later (several servers share a
	// PostgreSQL database) are taken over once their lease runs out.
	go func() {
		t := time.NewTicker(max(*leaseTTL/2, 100*time.Millisecond))
		defer t.Stop()
		for {
			select {
			case <-sessionsCtx.Done():
				return
			case <-t.C:
				recoverSessions(sessionsCtx, svc, log)
			}
		}
	}()
	// Private sandbox directories this machine keeps of sessions another
	// server ended (see assemble.SweepPrivateDirs).
	go resolver.KeepPrivateDirsSwept(sessionsCtx, st, privateSweepEvery)
	ready.Store(true)
	fmt.Fprintf(info, "agentloop serve: the dashboard is at http://%s/\n", ln.Addr())
	if *demo {
		id, err := startDemo(sessionsCtx, svc, service.Local("demo"), *workspaces, cmdUser.UID, cmdUser.GID)
		if err != nil {
			log.Error("demo", "err", err)
		} else {
			fmt.Fprintf(info, "agentloop serve: a demo session is running — watch it at http://%s/#/s/%s\n", ln.Addr(), id)
		}
	}

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sig)
	select {
	case s := <-sig:
		log.Info("stopping", "signal", s.String(), "grace", grace.String())
	case err := <-served:
		log.Error("the server stopped", "err", err)
		return exitFailed
	}
	ready.Store(false)
	// Streams end, new requests are refused, sessions pause at a safe point.
	stopRequests()
	sctx, cancel := context.WithTimeout(context.Background(), *grace)
	defer cancel()
	_ = srv.Shutdown(sctx)
	stopSessions(loop.ErrShutdown)
	if err := svc.Wait(sctx); err != nil {
		log.Warn("sessions still running at the end of the grace period; they are recovered when the server starts again", "err", err)
	}
	log.Info("stopped")
	return 0
}

// recoverSessions resumes what the last server left: sessions a crash left
// running (their lease expired) and sessions it paused as it shut down.
func recoverSessions(ctx context.Context, svc *service.Service, log *slog.Logger) {
	admin := service.Local("server")
	started, err := svc.Recover(ctx, admin)
	for _, s := range started {
		log.Info("recovered session", "session_id", s.ID)
	}
	if err != nil {
		log.Error("recovering sessions", "err", err)
	}
	paused, err := svc.List(ctx, admin, store.Filter{Status: []loop.Status{loop.StatusPaused}})
	if err != nil {
		log.Error("listing paused sessions", "err", err)
		return
	}
	for _, sum := range paused {
		if sum.Reason != loop.ReasonShutdown {
			continue
		}
		if _, err := svc.Resume(ctx, admin, sum.ID, "resumed after the server restarted"); err != nil && !errors.Is(err, service.ErrConflict) {
			log.Error("resuming session", "session_id", sum.ID, "err", err)
			continue
		}
		log.Info("resumed session", "session_id", sum.ID)
	}
}

func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func defaultWorkspaces() string {
	return filepath.Join(filepath.Dir(defaultDB()), "workspaces")
}

func configPrices(c *config.Config) string {
	if c == nil {
		return ""
	}
	return c.Prices
}

// closedAbove is the first directory above dir that other users cannot
// pass through (no o+x), or "".
func closedAbove(dir string) string {
	for d := filepath.Dir(dir); ; d = filepath.Dir(d) {
		if info, err := os.Stat(d); err == nil && info.Mode().Perm()&0o001 == 0 {
			return d
		}
		if d == filepath.Dir(d) {
			return ""
		}
	}
}

// postgresOverSocket reports whether a PostgreSQL URL connects through a
// UNIX socket: no host, or a host that is a directory.
func postgresOverSocket(db string) bool {
	if !assemble.IsPostgres(db) {
		return false
	}
	u, err := url.Parse(db)
	if err != nil {
		return false
	}
	host := u.Hostname()
	if h := u.Query().Get("host"); h != "" {
		host = h
	}
	return host == "" || strings.HasPrefix(host, "/")
}

// rootWorkspaces is where a server running as root keeps workspaces when
// its default, under root's home, is closed to the sandbox user.
const rootWorkspaces = "/var/lib/agentloop/workspaces"

// makePassable makes dir and its parent, passable by other users but not
// listable (0711).
func makePassable(dir string) error {
	if err := os.MkdirAll(dir, 0o711); err != nil {
		return err
	}
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o711); err != nil {
			return err
		}
	}
	return nil
}

// webhookSecret reads the notification secret from file, else from
// $AGENTLOOP_WEBHOOK_SECRET: never from the command line, where other
// users of the machine can read it.
func webhookSecret(file string) (string, error) {
	if file == "" {
		return os.Getenv("AGENTLOOP_WEBHOOK_SECRET"), nil
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("--webhook-secret-file: %v", err)
	}
	secret := strings.TrimSpace(string(b))
	if secret == "" {
		return "", fmt.Errorf("--webhook-secret-file %s is empty: put the signing secret in it", file)
	}
	return secret, nil
}
