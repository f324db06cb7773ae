package sandbox

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Network is what a session's processes may reach: nothing, everything,
// or TCP connections to listed ports only.
type Network struct {
	// Full allows every connection; Ports is then empty.
	Full bool
	// Ports are the TCP ports a process may connect to when not Full; none
	// means no network at all.
	Ports []uint16
}

// NoNetwork and FullNetwork are the two ends of the policy.
var (
	NoNetwork   = Network{}
	FullNetwork = Network{Full: true}
)

// ParseNetwork reads none, full, or a comma-separated list of TCP ports.
func ParseNetwork(s string) (Network, error) {
	s = strings.TrimSpace(s)
	switch s {
	case "none", "off":
		return NoNetwork, nil
	case "full", "on":
		return FullNetwork, nil
	case "":
		return Network{}, fmt.Errorf("network policy is empty: use none, full, or TCP ports such as 443,80")
	}
	var n Network
	for _, f := range strings.Split(s, ",") {
		port, err := strconv.ParseUint(strings.TrimSpace(f), 10, 16)
		if err != nil || port == 0 {
			return Network{}, fmt.Errorf("network policy %q: %q is not a TCP port; use none, full, or ports such as 443,80", s, f)
		}
		if !slices.Contains(n.Ports, uint16(port)) {
			n.Ports = append(n.Ports, uint16(port))
		}
	}
	slices.Sort(n.Ports)
	return n, nil
}

// String is the form ParseNetwork reads.
func (n Network) String() string {
	if n.Full {
		return "full"
	}
	if len(n.Ports) == 0 {
		return "none"
	}
	f := make([]string, len(n.Ports))
	for i, p := range n.Ports {
		f[i] = strconv.Itoa(int(p))
	}
	return strings.Join(f, ",")
}

// None says whether no connection at all is allowed.
func (n Network) None() bool { return !n.Full && len(n.Ports) == 0 }

// Narrow is what n allows that limit allows too: a session or profile may
// ask for less than the server allows, never more.
func (n Network) Narrow(limit Network) Network {
	switch {
	case limit.Full:
		return n
	case n.Full:
		return Network{Ports: slices.Clone(limit.Ports)}
	}
	var out Network
	for _, p := range n.Ports {
		if slices.Contains(limit.Ports, p) {
			out.Ports = append(out.Ports, p)
		}
	}
	return out
}

// Without removes ports that must never be reachable (the server's own,
// the database's) from a port list. A Full policy cannot exclude ports —
// the caller decides whether that is acceptable.
func (n Network) Without(ports ...uint16) Network {
	if n.Full {
		return n
	}
	out := Network{}
	for _, p := range n.Ports {
		if !slices.Contains(ports, p) {
			out.Ports = append(out.Ports, p)
		}
	}
	return out
}

// MarshalJSON records the policy as its string form.
func (n Network) MarshalJSON() ([]byte, error) { return json.Marshal(n.String()) }

// UnmarshalJSON reads the string form.
func (n *Network) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	v, err := ParseNetwork(s)
	if err != nil {
		return err
	}
	*n = v
	return nil
}
