package service

import "slices"

// Scope is a permission a caller holds.
type Scope string

const (
	// ScopeRead lets a caller get, list and watch its tenant's sessions.
	ScopeRead Scope = "sessions:read"
	// ScopeWrite lets a caller start and delete sessions.
	ScopeWrite Scope = "sessions:write"
	// ScopeControl lets a caller pause, resume, reply to, decide for and
	// terminate sessions.
	ScopeControl Scope = "sessions:control"
	// ScopeAllTenants lets a caller see and control every tenant's sessions.
	ScopeAllTenants Scope = "tenants:all"
)

// Caller is who asks: a tenant, a subject within it (a user or a key
// name, recorded with controls) and what it may do.
type Caller struct {
	Tenant  string
	Subject string
	Scopes  []Scope
}

// Local is the caller of a command run on this machine by its user: the
// local tenant, every scope.
func Local(subject string) Caller {
	return Caller{Subject: subject, Scopes: []Scope{ScopeRead, ScopeWrite, ScopeControl, ScopeAllTenants, ScopeAdmin}}
}

// Has reports whether the caller holds scope s.
func (c Caller) Has(s Scope) bool { return slices.Contains(c.Scopes, s) }

func (c Caller) has(s Scope) bool { return c.Has(s) }

func (c Caller) need(s Scope) error {
	if !c.has(s) {
		return forbidden("%s may not do this: it needs the %s scope", c.name(), s)
	}
	return nil
}

// sees reports whether the caller may see a session of tenant.
func (c Caller) sees(tenant string) bool {
	return c.Tenant == tenant || c.has(ScopeAllTenants)
}

func (c Caller) name() string {
	if c.Subject != "" {
		return "caller " + c.Subject
	}
	return "this caller"
}
