package notify

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
)

// CheckURL refuses a webhook URL that is not absolute http(s), carries
// credentials, or (unless allowPrivate) names a loopback, private,
// link-local or unspecified address — a server must not be made to call
// its own network. A host name is checked again when it is dialled (see
// dialControl), so a name that resolves to such an address is refused too.
func CheckURL(raw string, allowPrivate bool) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("webhook URL %q: %v", raw, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("webhook URL %q: use an http:// or https:// URL", raw)
	}
	if u.Host == "" || u.Hostname() == "" {
		return fmt.Errorf("webhook URL %q: no host", raw)
	}
	if u.User != nil {
		return fmt.Errorf("webhook URL %q: credentials in the URL are refused; the body is signed with the webhook's secret instead", raw)
	}
	if allowPrivate {
		return nil
	}
	host := strings.ToLower(u.Hostname())
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return fmt.Errorf("webhook URL %q: loopback addresses are refused (a server started with --webhook-allow-private allows them)", raw)
	}
	if ip, err := netip.ParseAddr(host); err == nil && !public(ip) {
		return fmt.Errorf("webhook URL %q: %s is a loopback, private or link-local address, refused (a server started with --webhook-allow-private allows them)", raw, ip)
	}
	return nil
}

// public reports whether ip is an address of the open internet.
func public(ip netip.Addr) bool {
	ip = ip.Unmap()
	return !(ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() ||
		ip.IsUnspecified() || ip.IsMulticast() || ip.IsInterfaceLocalMulticast() ||
		netip.MustParsePrefix("100.64.0.0/10").Contains(ip)) // carrier-grade NAT
}

// dialControl refuses connections to non-public addresses, whatever name
// led there.
func dialControl(_ context.Context, network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("webhook: dial %s: %v", address, err)
	}
	if !public(ap.Addr()) {
		return fmt.Errorf("webhook: %s is a loopback, private or link-local address, refused (--webhook-allow-private allows it)", ap.Addr())
	}
	return nil
}

func dialer(allowPrivate bool) *net.Dialer {
	d := &net.Dialer{}
	if !allowPrivate {
		d.ControlContext = dialControl
	}
	return d
}
