package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/agentloop/agentloop/config"
	"github.com/agentloop/agentloop/tool/mcp"
)

// mcpAccountCommands are agentloop mcp's subcommands for the OAuth logins
// of remote MCP servers; anything else after "mcp" is agentloop serving
// MCP itself.
var mcpAccountCommands = map[string]func(args []string, stdout, stderr io.Writer) int{
	"login":  cmdMCPLogin,
	"logout": cmdMCPLogout,
	"status": cmdMCPStatus,
}

// mcpServerFlags are the flags that find a configured MCP server.
type mcpServerFlags struct {
	configPath, profile *string
	jsonOut             *bool
}

func (f *mcpServerFlags) register(fs *flag.FlagSet, jsonHelp string) {
	f.configPath = fs.String("config", "", "config file with the MCP servers (default $AGENTLOOP_CONFIG or ~/.config/agentloop/config.yaml)")
	f.profile = fs.String("profile", "", "look for the server in this profile only (when profiles configure servers of the same name differently)")
	f.jsonOut = fs.Bool("json", false, jsonHelp)
}

// load reads the config file; missing is true when there is none.
func (f *mcpServerFlags) load() (cfg *config.Config, path string, missing bool, err error) {
	path = *f.configPath
	if path == "" {
		path = config.DefaultPath()
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
			return nil, path, true, nil
		}
	}
	cfg, err = config.Load(path)
	return cfg, path, false, err
}

// configuredServer is a URL server of the config file and the profiles
// that configure it.
type configuredServer struct {
	mcp.ServerConfig
	Profiles []string
}

// urlServers lists the config's MCP servers reached by url (in profile
// order; one entry per name and URL), only profile's when it is set.
func urlServers(cfg *config.Config, profile string) ([]*configuredServer, error) {
	if cfg == nil {
		return nil, nil
	}
	names := cfg.ProfileNames()
	if profile != "" {
		if !slices.Contains(names, profile) {
			return nil, fmt.Errorf("--profile: no profile %q in %s (profiles: %s)", profile, cfg.Path, strings.Join(names, ", "))
		}
		names = []string{profile}
	}
	var out []*configuredServer
	for _, pn := range names {
		p, err := cfg.Profile(pn)
		if err != nil {
			return nil, err
		}
	servers:
		for _, s := range p.MCPServers {
			if s.URL == "" {
				continue
			}
			for _, o := range out {
				if o.Name == s.Name && o.URL == s.URL {
					o.Profiles = append(o.Profiles, pn)
					continue servers
				}
			}
			out = append(out, &configuredServer{ServerConfig: s, Profiles: []string{pn}})
		}
	}
	return out, nil
}

// findOAuthServer returns the server called name that uses OAuth, or an
// error that says what to change.
func findOAuthServer(cfg *config.Config, path, profile, name string) (*configuredServer, error) {
	all, err := urlServers(cfg, profile)
	if err != nil {
		return nil, err
	}
	var found []*configuredServer
	var oauthNames []string
	for _, s := range all {
		if s.Name == name {
			found = append(found, s)
		}
		if s.OAuth != nil && !slices.Contains(oauthNames, s.Name) {
			oauthNames = append(oauthNames, s.Name)
		}
	}
	switch {
	case len(found) == 0:
		known := "none is configured with oauth"
		if len(oauthNames) > 0 {
			known = "servers with oauth: " + strings.Join(oauthNames, ", ")
		}
		return nil, fmt.Errorf("no MCP server %q reached by url in %s (%s); add it under a profile's mcp_servers with url and oauth: true (see config/example.yaml)", name, path, known)
	case len(found) > 1:
		var where []string
		for _, s := range found {
			where = append(where, fmt.Sprintf("%s in %s", s.URL, strings.Join(s.Profiles, ", ")))
		}
		return nil, fmt.Errorf("MCP server %q has different urls in different profiles (%s); pick one with --profile", name, strings.Join(where, "; "))
	case found[0].OAuth == nil:
		return nil, fmt.Errorf("MCP server %q (%s) is not set to use OAuth; add \"oauth: true\" under it in %s", name, found[0].URL, path)
	}
	return found[0], nil
}

func cmdMCPLogin(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mcp login", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var sf mcpServerFlags
	sf.register(fs, `print {"server", "url", "client_id", "expires_at", "tools", "tokens_file", …} as JSON`)
	noBrowser := fs.Bool("no-browser", false, "only print the URL to open; do not start a browser")
	timeout := fs.Duration("timeout", 5*time.Minute, "give up when the browser has not come back by then")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: agentloop mcp login NAME [flags]\n\nLogs in to the remote MCP server NAME of the config file (one with url and oauth):")
		fmt.Fprintln(stderr, "prints the authorization page's URL (and opens it in a browser when there is a display),")
		fmt.Fprintln(stderr, "waits for the browser to come back to 127.0.0.1, and stores the tokens, which sessions then")
		fmt.Fprintln(stderr, "use and refresh, in "+mcp.DefaultTokenFile().Path+" (mode 0600).\n\nFlags:")
		fs.PrintDefaults()
	}
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() != 1 {
		fmt.Fprintln(stderr, "agentloop mcp login: give the name of one MCP server (agentloop mcp status lists them)")
		return exitUsage
	}
	name := fs.Arg(0)
	cfg, path, missing, err := sf.load()
	if err != nil {
		return fail(stderr, "%v", err)
	}
	if missing {
		fmt.Fprintf(stderr, "agentloop mcp login: no config file at %s; MCP servers are configured there (see config/example.yaml), or give --config\n", path)
		return exitUsage
	}
	srv, err := findOAuthServer(cfg, path, *sf.profile, name)
	if err != nil {
		fmt.Fprintf(stderr, "agentloop mcp login: %v\n", err)
		return exitUsage
	}
	ctx, cancel := context.WithTimeoutCause(context.Background(), *timeout, fmt.Errorf("gave up after --timeout %v", *timeout))
	defer cancel()
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	var redirect string
	res, err := mcp.Login(ctx, srv.ServerConfig, mcp.LoginOptions{
		RedirectListening: func(u string) { redirect = u },
		Visit: func(authURL string) {
			fmt.Fprintf(stderr, "To log in to MCP server %q (%s), open this URL in a browser:\n\n  %s\n\n", name, srv.URL, authURL)
			if !*noBrowser && openBrowser(authURL) {
				fmt.Fprintln(stderr, "(opened in your browser)")
			}
			fmt.Fprintf(stderr, "Waiting for the browser to come back to %s (Ctrl-C to give up)…\n", redirect)
		},
	})
	if err != nil {
		if errors.Is(err, mcp.ErrNoLoginNeeded) {
			fmt.Fprintf(stderr, "agentloop mcp login: %v\n", err)
			return exitUsage
		}
		return fail(stderr, "mcp login: %v", err)
	}
	st := loginStatusOf(res.Login, srv, time.Now())
	st.Tools = &res.Tools
	st.TokensFile = mcp.DefaultTokenFile().Path
	if *sf.jsonOut {
		return printJSON(stdout, st)
	}
	fmt.Fprintf(stdout, "Logged in to MCP server %q (%s): %d tool%s offered.\n", name, srv.URL, res.Tools, plural(res.Tools))
	refresh := "; log in again then (the server gave no refresh token)"
	if st.Refreshable {
		refresh = "; sessions refresh it"
	}
	fmt.Fprintf(stdout, "The access token expires %s%s. Tokens are stored in %s.\n", expiryPhrase(res.Login, time.Now()), refresh, st.TokensFile)
	return 0
}

func cmdMCPLogout(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mcp logout", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var sf mcpServerFlags
	sf.register(fs, `print {"server", "url", "logged_out"} as JSON`)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: agentloop mcp logout NAME [flags]\n\nForgets the OAuth tokens stored for the MCP server NAME (its url in the config file,")
		fmt.Fprintln(stderr, "or the name it was logged in under). Sessions connecting to it afterwards are refused")
		fmt.Fprintln(stderr, "until agentloop mcp login NAME. The authorization server is not told; revoke agentloop's")
		fmt.Fprintln(stderr, "access there to end the grant itself.\n\nFlags:")
		fs.PrintDefaults()
	}
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() != 1 {
		fmt.Fprintln(stderr, "agentloop mcp logout: give the name of one MCP server (agentloop mcp status lists them)")
		return exitUsage
	}
	name := fs.Arg(0)
	cfg, path, _, err := sf.load()
	if err != nil {
		return fail(stderr, "%v", err)
	}
	tokens := mcp.DefaultTokenFile()
	url := ""
	if srv, ferr := findOAuthServer(cfg, path, *sf.profile, name); ferr == nil {
		url = srv.URL
	} else {
		// Not (or no longer) configured: the name it was logged in under.
		stored, err := tokens.All()
		if err != nil {
			return fail(stderr, "%v", err)
		}
		for _, l := range stored {
			if l.Server == name {
				url = l.URL
			}
		}
		if url == "" {
			fmt.Fprintf(stderr, "agentloop mcp logout: %v\n", ferr)
			return exitUsage
		}
	}
	found, err := tokens.Delete(url)
	if err != nil {
		return fail(stderr, "%v", err)
	}
	if *sf.jsonOut {
		return printJSON(stdout, map[string]any{"server": name, "url": url, "logged_out": found})
	}
	if !found {
		fmt.Fprintf(stdout, "MCP server %q (%s) was not logged in.\n", name, url)
		return 0
	}
	fmt.Fprintf(stdout, "Logged out of MCP server %q (%s): its tokens are removed from %s.\n", name, url, tokens.Path)
	return 0
}

// loginStatus is one line of agentloop mcp status (and login's --json).
type loginStatus struct {
	Server     string   `json:"server"`
	URL        string   `json:"url"`
	Profiles   []string `json:"profiles,omitempty"`
	Configured bool     `json:"configured"`
	LoggedIn   bool     `json:"logged_in"`
	// State is "logged in", "expired, refreshable", "expired" (log in
	// again) or "not logged in".
	State       string     `json:"state"`
	ExpiresAt   *time.Time `json:"expires_at,omitempty"`
	Refreshable bool       `json:"refreshable"`
	ClientID    string     `json:"client_id,omitempty"`
	Registered  bool       `json:"client_registered,omitempty"`
	Scopes      []string   `json:"scopes,omitempty"`
	LoggedInAt  *time.Time `json:"logged_in_at,omitempty"`
	RefreshedAt *time.Time `json:"refreshed_at,omitempty"`
	Tools       *int       `json:"tools,omitempty"`
	TokensFile  string     `json:"tokens_file,omitempty"`
}

func loginStatusOf(l *mcp.StoredLogin, srv *configuredServer, now time.Time) loginStatus {
	st := loginStatus{State: "not logged in"}
	if srv != nil {
		st.Server, st.URL, st.Profiles, st.Configured = srv.Name, srv.URL, srv.Profiles, true
	}
	if l == nil {
		return st
	}
	if srv == nil {
		st.Server, st.URL = l.Server, l.URL
	}
	st.LoggedIn, st.ClientID, st.Registered, st.Scopes = true, l.ClientID, l.Registered, l.Scopes
	st.Refreshable = l.Token.RefreshToken != ""
	st.LoggedInAt = timePtr(l.LoggedInAt)
	st.RefreshedAt = timePtr(l.RefreshedAt)
	st.ExpiresAt = timePtr(l.Token.Expiry)
	switch {
	case l.Token.Expiry.IsZero() || l.Token.Expiry.After(now):
		st.State = "logged in"
	case st.Refreshable:
		st.State = "expired, refreshable"
	default:
		st.State = "expired"
	}
	return st
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	t = t.UTC()
	return &t
}

func cmdMCPStatus(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mcp status", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var sf mcpServerFlags
	sf.register(fs, `print [{"server", "url", "logged_in", "state", "expires_at", "refreshable", …}] as JSON`)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: agentloop mcp status [flags]\n\nLists the remote MCP servers that use OAuth (from the config file) and the logins stored")
		fmt.Fprintln(stderr, "in "+mcp.DefaultTokenFile().Path+": which are logged in and when their access tokens")
		fmt.Fprintln(stderr, "expire (an expired one with a refresh token is refreshed when a session connects).\n\nFlags:")
		fs.PrintDefaults()
	}
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "agentloop mcp status: unexpected arguments %q\n", fs.Args())
		return exitUsage
	}
	cfg, _, _, err := sf.load()
	if err != nil {
		return fail(stderr, "%v", err)
	}
	servers, err := urlServers(cfg, *sf.profile)
	if err != nil {
		fmt.Fprintf(stderr, "agentloop mcp status: %v\n", err)
		return exitUsage
	}
	tokens := mcp.DefaultTokenFile()
	stored, err := tokens.All()
	if err != nil {
		return fail(stderr, "%v", err)
	}
	now := time.Now()
	byURL := map[string]*mcp.StoredLogin{}
	for _, l := range stored {
		byURL[l.URL] = l
	}
	list := []loginStatus{}
	shown := map[string]bool{}
	for _, s := range servers {
		if s.OAuth != nil {
			list = append(list, loginStatusOf(byURL[s.URL], s, now))
			shown[s.URL] = true
		}
	}
	for _, l := range stored {
		if !shown[l.URL] {
			list = append(list, loginStatusOf(l, nil, now))
		}
	}
	if *sf.jsonOut {
		return printJSON(stdout, list)
	}
	if len(list) == 0 {
		fmt.Fprintln(stdout, "No MCP server uses OAuth: give a server with a url \"oauth: true\" in the config file, then agentloop mcp login NAME.")
		return 0
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SERVER\tURL\tSTATUS\tACCESS TOKEN EXPIRES")
	for _, st := range list {
		state := st.State
		if !st.Configured {
			state += " (not in the config)"
		}
		expiry := "-"
		if l := byURL[st.URL]; l != nil {
			expiry = expiryPhrase(l, now)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", safeText(st.Server), safeText(st.URL), state, expiry)
	}
	tw.Flush()
	for _, st := range list {
		switch st.State {
		case "not logged in", "expired":
			fmt.Fprintf(stdout, "Log in to %s with: agentloop mcp login %s\n", st.Server, st.Server)
		}
	}
	return 0
}

// expiryPhrase says when l's access token expires: a time, and how far
// off it is.
func expiryPhrase(l *mcp.StoredLogin, now time.Time) string {
	exp := l.Token.Expiry
	switch {
	case exp.IsZero():
		return "never expires"
	case exp.After(now):
		return fmt.Sprintf("%s (in %s)", exp.Local().Format("2006-01-02 15:04"), roughly(exp.Sub(now)))
	}
	return fmt.Sprintf("%s (expired %s ago)", exp.Local().Format("2006-01-02 15:04"), roughly(now.Sub(exp)))
}

// roughly is d in hours and minutes ("1h", "1h5m", "42m", "<1m").
func roughly(d time.Duration) string {
	d = d.Round(time.Minute)
	h, m := int(d.Hours()), int(d.Minutes())%60
	switch {
	case h > 0 && m > 0:
		return fmt.Sprintf("%dh%dm", h, m)
	case h > 0:
		return fmt.Sprintf("%dh", h)
	case m > 0:
		return fmt.Sprintf("%dm", m)
	}
	return "<1m"
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// openBrowser starts a browser on url when there is a display to show it
// on, and reports whether one was started. The login goes on either way:
// the URL is printed too.
func openBrowser(url string) bool {
	var name string
	var args []string
	switch runtime.GOOS {
	case "darwin":
		name = "open"
	case "windows":
		name, args = "rundll32", []string{"url.dll,FileProtocolHandler"}
	default:
		if os.Getenv("DISPLAY") == "" && os.Getenv("WAYLAND_DISPLAY") == "" {
			return false
		}
		name = "xdg-open"
	}
	path, err := exec.LookPath(name)
	if err != nil {
		return false
	}
	cmd := exec.Command(path, append(args, url)...)
	if err := cmd.Start(); err != nil {
		return false
	}
	go func() { _ = cmd.Wait() }()
	return true
}
