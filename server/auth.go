package server

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/agentloop/agentloop/service"
	"github.com/agentloop/agentloop/store"
)

// Roles and what they may do: a viewer reads, an operator starts and
// controls sessions, an admin also manages keys and prompts.
var roles = map[string][]service.Scope{
	"viewer":   {service.ScopeRead},
	"operator": {service.ScopeRead, service.ScopeWrite, service.ScopeControl},
	"admin":    {service.ScopeRead, service.ScopeWrite, service.ScopeControl, scopeAdmin},
}

const scopeAdmin = service.ScopeAdmin

// keyPrefix marks agentloop keys, so a leaked one is recognisable.
const keyPrefix = "al_"

// NewKey makes an API key for a tenant and role. The secret is shown once;
// only the record (with its hash) is stored.
func NewKey(tenant, role, name string, now time.Time) (secret string, k store.Key, err error) {
	if _, ok := roles[role]; !ok {
		return "", store.Key{}, fmt.Errorf("role %q: use admin, operator or viewer", role)
	}
	if tenant == "" {
		return "", store.Key{}, errors.New("a key needs a tenant (--tenant NAME)")
	}
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", store.Key{}, err
	}
	secret = keyPrefix + base64.RawURLEncoding.EncodeToString(b[:])
	var id [6]byte
	_, _ = rand.Read(id[:])
	return secret, store.Key{ID: "key_" + hex.EncodeToString(id[:]), Hash: hashKey(secret), Tenant: tenant, Role: role, Name: name, CreatedAt: now}, nil
}

func hashKey(secret string) string {
	h := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(h[:])
}

// auth finds the caller of a request: its Bearer key's tenant and role,
// or, on a server that does not require keys, the local caller.
func (s *Server) auth(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		caller, hash, status, msg := s.callerFor(r)
		if status != 0 {
			if status == http.StatusUnauthorized {
				w.Header().Set("WWW-Authenticate", `Bearer realm="agentloop"`)
			}
			problem(w, status, msg)
			return
		}
		if rl := s.cfg.RateLimit; rl.Per > 0 && r.Header.Get("Authorization") != "" { // the caller is a key
			if ok, wait := s.limits.allow(rl, caller.Subject, time.Now()); !ok {
				limited(w, caller.Subject, rl, wait)
				return
			}
		}
		ctx := context.WithValue(r.Context(), callerKey{}, caller)
		if hash != "" {
			var release func()
			ctx, release = s.live.hold(ctx, caller.Subject, hash)
			defer release()
		}
		next(w, r.WithContext(ctx))
	}
}

// callerFor finds the caller and, for a key, its hash; a refusal is a
// status and a message.
func (s *Server) callerFor(r *http.Request) (c service.Caller, hash string, status int, msg string) {
	h := r.Header.Get("Authorization")
	if h == "" {
		if s.cfg.RequireKeys {
			return service.Caller{}, "", http.StatusUnauthorized, "this server requires an API key: send Authorization: Bearer KEY (create one with agentloop keys create --tenant T --role operator)"
		}
		return service.Local("local"), "", 0, ""
	}
	secret, ok := strings.CutPrefix(h, "Bearer ")
	if !ok || s.cfg.Keys == nil {
		return service.Caller{}, "", http.StatusUnauthorized, "the Authorization header must be Bearer KEY"
	}
	hash = hashKey(strings.TrimSpace(secret))
	k, err := s.cfg.Keys.KeyByHash(r.Context(), hash)
	// Only hashes are stored and looked up; the comparison of the one found
	// takes the same time wherever the two differ.
	if err == nil && subtle.ConstantTimeCompare([]byte(k.Hash), []byte(hash)) != 1 {
		err = store.ErrNotFound
	}
	if errors.Is(err, store.ErrNotFound) {
		return service.Caller{}, "", http.StatusUnauthorized, "unknown API key"
	}
	if err != nil {
		s.log.Error("reading API key", "err", err)
		return service.Caller{}, "", http.StatusServiceUnavailable, "cannot check the API key now; try again"
	}
	return service.Caller{Tenant: k.Tenant, Subject: k.ID, Scopes: roles[k.Role]}, hash, 0, ""
}
