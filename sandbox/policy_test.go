package sandbox

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseNetwork(t *testing.T) {
	for in, want := range map[string]string{"none": "none", "full": "full", "443": "443", " 80, 443,80 ": "80,443"} {
		n, err := ParseNetwork(in)
		if err != nil || n.String() != want {
			t.Errorf("ParseNetwork(%q) = %v, %v; want %s", in, n, err, want)
		}
	}
	for _, bad := range []string{"", "0", "70000", "http", "443,x"} {
		if _, err := ParseNetwork(bad); err == nil {
			t.Errorf("ParseNetwork(%q) accepted", bad)
		}
	}
}

// A narrower setting never widens what the server allows, and the
// server's own ports never stay in a list.
func TestNetworkNarrowAndWithout(t *testing.T) {
	ports := func(s string) Network { n, _ := ParseNetwork(s); return n }
	cases := []struct{ ask, limit, want string }{
		{"full", "full", "full"},
		{"full", "443", "443"},
		{"443,80", "443", "443"},
		{"22", "443", "none"},
		{"none", "full", "none"},
	}
	for _, c := range cases {
		if got := ports(c.ask).Narrow(ports(c.limit)).String(); got != c.want {
			t.Errorf("%s narrowed by %s = %s, want %s", c.ask, c.limit, got, c.want)
		}
	}
	if got := ports("8080,443,5432").Without(8080, 5432).String(); got != "443" {
		t.Errorf("Without = %s", got)
	}
}

func TestEncodeDecode(t *testing.T) {
	p := Policy{Backend: Bwrap, Network: Network{Ports: []uint16{443}}, Workspace: "/w", Private: "/p"}.WithDefaults()
	got, err := Decode(p.Encode())
	if err != nil || !reflect.DeepEqual(got, p) {
		t.Fatalf("Decode(Encode) = %+v, %v; want %+v", got, err, p)
	}
	if _, err := Decode(`{"backend":"chroot"}`); err == nil {
		t.Error("an unknown backend decoded")
	}
}

func TestExplain(t *testing.T) {
	p := Policy{Backend: Landlock, Network: NoNetwork}
	if got := p.Explain("sh: 1: cannot create /etc/x: Permission denied"); !strings.Contains(got, "writes only inside the workspace") || !strings.Contains(got, "network is off") {
		t.Errorf("Explain = %q", got)
	}
	if got := p.Explain("FAIL: TestAdd: got 3, want 4"); got != "" {
		t.Errorf("an ordinary failure explained as a refusal: %q", got)
	}
	if got := p.Explain("cat: notes.txt: No such file or directory"); p.Backend != Bwrap && got != "" {
		t.Errorf("a missing file under %s explained as the sandbox: %q", p.Backend, got)
	}
	if got := (Policy{Backend: Bwrap}).Explain("ls: cannot access '/root': No such file or directory"); !strings.Contains(got, "[sandbox]") {
		t.Errorf("a path bwrap hides, not explained: %q", got)
	}
	if got := (Policy{Backend: None}).Explain("Permission denied"); got != "" {
		t.Errorf("no sandbox, yet %q", got)
	}
	if got := p.Explain("File size limit exceeded"); !strings.Contains(got, "1024 MB files") {
		t.Errorf("Explain(limit) = %q", got)
	}
}

// Every backend's probe answers; the ones that fail say what to do.
func TestProbeSaysWhatToDo(t *testing.T) {
	if err := Probe(None, NoNetwork); err != nil {
		t.Errorf("none: %v", err)
	}
	if err := Probe("chroot", NoNetwork); err == nil {
		t.Error("an unknown backend probed fine")
	}
	if _, err := landlockConfig(Policy{Network: NoNetwork}, 3); err == nil || !strings.Contains(err.Error(), "--sandbox bwrap") {
		t.Errorf("ABI 3 with no network: %v", err)
	}
	if _, err := landlockConfig(Policy{Network: FullNetwork}, 1); err == nil || !strings.Contains(err.Error(), "upgrade the kernel") {
		t.Errorf("ABI 1: %v", err)
	}
	if _, err := landlockConfig(Policy{Network: FullNetwork}, 3); err != nil {
		t.Errorf("ABI 3 with full network: %v", err)
	}
}
