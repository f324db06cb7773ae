package mcp

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	"golang.org/x/oauth2"

	"github.com/agentloop/agentloop/internal/datadir"
	"github.com/agentloop/agentloop/internal/durable"
	"github.com/agentloop/agentloop/internal/filelock"
)

// TokenFile keeps the OAuth token sets of MCP servers, keyed by server
// URL, in one JSON file readable only by its owner (mode 0600, in a 0700
// directory). Every change takes an exclusive lock on PATH.lock, rereads
// the file and replaces it whole by renaming a new file over it, so
// processes sharing the file (a CLI run beside agentloop serve) never see
// a half-written file nor lose each other's changes, and at most one of
// them refreshes a server's token at a time.
type TokenFile struct {
	Path string
}

// TokenFileName is the file's name in agentloop's data directory.
const TokenFileName = "mcp-oauth.json"

// DefaultTokenFile is mcp-oauth.json in agentloop's data directory, beside
// the default session database: $XDG_DATA_HOME/agentloop, else
// ~/.local/share/agentloop.
func DefaultTokenFile() *TokenFile {
	return &TokenFile{Path: filepath.Join(datadir.Dir(), TokenFileName)}
}

// StoredLogin is what a login leaves for one server: the client it used,
// the authorization server's endpoints and the current token set.
type StoredLogin struct {
	// Server is the configured name at login (a label; URL is the key).
	Server string `json:"server"`
	URL    string `json:"url"`
	// ClientID and ClientSecret identify the client: registered at login
	// (Registered) or configured.
	ClientID     string `json:"client_id"`
	ClientSecret string `json:"client_secret,omitempty"`
	Registered   bool   `json:"registered,omitempty"`
	// AuthStyle is how the client authenticates at the token endpoint
	// (oauth2.AuthStyle).
	AuthStyle oauth2.AuthStyle `json:"auth_style,omitempty"`
	Issuer    string           `json:"issuer,omitempty"`
	AuthURL   string           `json:"authorization_endpoint"`
	TokenURL  string           `json:"token_endpoint"`
	Scopes    []string         `json:"scopes,omitempty"`
	Token     *oauth2.Token    `json:"token"`
	// LoggedInAt is when the person logged in; RefreshedAt when the token
	// was last refreshed (zero: never).
	LoggedInAt  time.Time `json:"logged_in_at"`
	RefreshedAt time.Time `json:"refreshed_at,omitzero"`
}

// config is the oauth2 configuration that refreshes l's token.
func (l *StoredLogin) config() *oauth2.Config {
	return &oauth2.Config{
		ClientID:     l.ClientID,
		ClientSecret: l.ClientSecret,
		Endpoint:     oauth2.Endpoint{AuthURL: l.AuthURL, TokenURL: l.TokenURL, AuthStyle: l.AuthStyle},
		Scopes:       l.Scopes,
	}
}

type tokenFileBody struct {
	Servers map[string]*StoredLogin `json:"servers"`
}

// Get returns the login stored for url, or nil.
func (f *TokenFile) Get(url string) (*StoredLogin, error) {
	all, err := f.read()
	if err != nil {
		return nil, err
	}
	return all[url], nil
}

// All returns every stored login, sorted by URL.
func (f *TokenFile) All() ([]*StoredLogin, error) {
	all, err := f.read()
	if err != nil {
		return nil, err
	}
	out := make([]*StoredLogin, 0, len(all))
	for _, l := range all {
		out = append(out, l)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].URL < out[j].URL })
	return out, nil
}

// Put stores l under l.URL, replacing what was there.
func (f *TokenFile) Put(l *StoredLogin) error {
	return f.update(func(all map[string]*StoredLogin) error {
		all[l.URL] = l
		return nil
	})
}

// Delete forgets the login stored for url and reports whether there was one.
func (f *TokenFile) Delete(url string) (bool, error) {
	found := false
	err := f.update(func(all map[string]*StoredLogin) error {
		_, found = all[url]
		delete(all, url)
		return nil
	})
	return found, err
}

func (f *TokenFile) read() (map[string]*StoredLogin, error) {
	data, err := os.ReadFile(f.Path)
	if errors.Is(err, os.ErrNotExist) {
		return map[string]*StoredLogin{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("MCP OAuth tokens: %w", err)
	}
	var body tokenFileBody
	if err := json.Unmarshal(data, &body); err != nil {
		return nil, fmt.Errorf("MCP OAuth tokens: %s is not a token file (%v); delete it and log in again", f.Path, err)
	}
	if body.Servers == nil {
		body.Servers = map[string]*StoredLogin{}
	}
	for url, l := range body.Servers {
		if l == nil || l.Token == nil {
			delete(body.Servers, url)
		}
	}
	return body.Servers, nil
}

// update runs fn on the stored logins under the file's lock and writes
// the result if fn succeeds.
func (f *TokenFile) update(fn func(map[string]*StoredLogin) error) error {
	if err := os.MkdirAll(filepath.Dir(f.Path), 0o700); err != nil {
		return fmt.Errorf("MCP OAuth tokens: %w", err)
	}
	unlock, err := filelock.Lock(f.Path+".lock", true)
	if err != nil {
		return fmt.Errorf("MCP OAuth tokens: locking %s: %w", f.Path, err)
	}
	defer unlock()
	all, err := f.read()
	if err != nil {
		return err
	}
	if err := fn(all); err != nil {
		return err
	}
	return f.write(all)
}

// write replaces the file: a reader sees the old content or the new, never
// a mix, and the tokens are never readable by others (durable.WriteFile
// makes the file 0600 before anything is written to it).
func (f *TokenFile) write(all map[string]*StoredLogin) error {
	data, err := json.MarshalIndent(tokenFileBody{Servers: all}, "", "  ")
	if err != nil {
		return err
	}
	if err := durable.WriteFile(f.Path, append(data, '\n')); err != nil {
		return fmt.Errorf("MCP OAuth tokens: %w", err)
	}
	return nil
}
