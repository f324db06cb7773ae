package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/agentloop/agentloop/loop"
)

// Lease is one process's ownership of a session: only the holder runs it,
// and its appends are fenced by Token.
type Lease struct {
	SessionID string
	Owner     string // e.g. host:pid:random
	// Token grows every time the lease changes hands (never on renewal):
	// a fencing token.
	Token   int64
	Expires time.Time
}

var (
	// ErrLeaseHeld is returned (wrapped) by Acquire while another owner's
	// lease has not expired.
	ErrLeaseHeld = errors.New("session is owned by another process")
	// ErrLeaseLost is returned (wrapped) by Renew and AppendFenced when the
	// token is no longer the session's current one: another process took
	// the lease.
	ErrLeaseLost = errors.New("the lease on this session was lost to another process")
)

// Leases is session ownership with fencing.
type Leases interface {
	// Acquire takes the lease until now+ttl. It is granted when the session
	// has no lease, its lease expired, or owner already holds it (renewed,
	// same token). A new holder gets a token greater than any earlier one
	// of the session. A lease may be taken before the session exists.
	Acquire(ctx context.Context, sessionID, owner string, ttl time.Duration) (Lease, error)
	// Renew extends a lease still held (same token), or fails with
	// ErrLeaseLost.
	Renew(ctx context.Context, l Lease, ttl time.Duration) (Lease, error)
	// Release expires the lease at once if its token is still current; it
	// is not an error when it is not.
	Release(ctx context.Context, l Lease) error
	// AppendFenced is Append that succeeds only while token is the
	// session's current lease token (expired or not, as long as nobody
	// acquired it since); otherwise it fails with ErrLeaseLost and writes
	// nothing. The check and the write are atomic.
	AppendFenced(ctx context.Context, token int64, events ...loop.Event) error
	// LeasesOf returns the current leases of the given sessions (of every
	// session when none are given), expired ones included.
	LeasesOf(ctx context.Context, ids ...string) (map[string]Lease, error)
}

// LeaseStarter is a store that takes a session's lease in the transaction
// that appends its events: one commit where Acquire and then AppendFenced
// make two. The service starts sessions with it when the store has it.
type LeaseStarter interface {
	// AppendAcquiring appends events, all of one session, and takes that
	// session's lease for owner until now+ttl, atomically: both or
	// neither. The lease is granted as Acquire grants it (ErrLeaseHeld,
	// wrapped, while another owner's lease is live) and the events are
	// checked as Append checks them (loop.ErrSeqConflict); when either
	// fails, nothing is written.
	AppendAcquiring(ctx context.Context, owner string, ttl time.Duration, events ...loop.Event) (Lease, error)
}

// LeaseRenewer is a store that renews many leases in one write: a server
// running thousands of sessions renews their leases in one commit rather
// than one commit each. The service renews with it when the store has it.
type LeaseRenewer interface {
	// RenewAll extends each lease still held (same token) until now+ttl
	// and returns those it renewed, in the order given; a lease missing
	// from them was lost, as Renew's ErrLeaseLost says. On an error some
	// may have been renewed, and the caller is not told which.
	RenewAll(ctx context.Context, leases []Lease, ttl time.Duration) ([]Lease, error)
}

// RenewOne renews one lease with RenewAll, as Renew does: ErrLeaseLost
// when it is no longer held. For a store whose Renew is its RenewAll.
func RenewOne(ctx context.Context, rn LeaseRenewer, l Lease, ttl time.Duration) (Lease, error) {
	renewed, err := rn.RenewAll(ctx, []Lease{l}, ttl)
	if err != nil {
		return Lease{}, err
	}
	if len(renewed) == 0 {
		return Lease{}, fmt.Errorf("session %s, token %d: %w", l.SessionID, l.Token, ErrLeaseLost)
	}
	return renewed[0], nil
}

// RenewEach renews leases one Renew at a time, as RenewAll reports it:
// those renewed, in order, without those lost; it stops at the first
// other failure. For a store that has no RenewAll, and for the leases a
// RenewAll must renew one by one.
func RenewEach(ctx context.Context, st Leases, leases []Lease, ttl time.Duration) ([]Lease, error) {
	var renewed []Lease
	for _, l := range leases {
		next, err := st.Renew(ctx, l, ttl)
		switch {
		case err == nil:
			renewed = append(renewed, next)
		case !errors.Is(err, ErrLeaseLost):
			return nil, err
		}
	}
	return renewed, nil
}

// ControlKind is what a person asked a session to do.
type ControlKind string

const (
	ControlPause     ControlKind = "pause"
	ControlResume    ControlKind = "resume"
	ControlReply     ControlKind = "reply"
	ControlDecide    ControlKind = "decide"
	ControlTerminate ControlKind = "terminate"
)

// Control is a durable request to a session, honoured by whichever process
// owns it.
type Control struct {
	ID        int64 // assigned by the store, increasing across sessions
	SessionID string
	Kind      ControlKind
	// Text is the pause note, reply text, terminate reason or resume note.
	Text string
	// Decision is a decide request's loop.ApprovalDecision, as JSON.
	Decision  json.RawMessage
	Subject   string // who asked
	CreatedAt time.Time
	Done      bool
	// Outcome says what happened ("the session pauses after …", "refused: …").
	Outcome string
}

// Controls are durable control requests.
type Controls interface {
	// RequestControl stores c (its ID and CreatedAt assigned) and returns it.
	RequestControl(ctx context.Context, c Control) (Control, error)
	// ControlsAfter returns the controls not yet done with ID > after,
	// oldest first, across every session.
	ControlsAfter(ctx context.Context, after int64) ([]Control, error)
	// PendingControls returns a session's controls not yet done, oldest first.
	PendingControls(ctx context.Context, sessionID string) ([]Control, error)
	// CompleteControl marks a control done with its outcome; completing
	// one twice keeps the first outcome and is not an error.
	CompleteControl(ctx context.Context, id int64, outcome string) error
	// Control returns one control, or ErrNotFound (wrapped).
	Control(ctx context.Context, id int64) (Control, error)
}
