package sandbox

import (
	"fmt"

	"github.com/landlock-lsm/go-landlock/landlock"
	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
)

// landlockVersions are go-landlock's configurations by ABI, V1 first.
var landlockVersions = []landlock.Config{
	landlock.V1, landlock.V2, landlock.V3, landlock.V4, landlock.V5, landlock.V6,
	landlock.V7, landlock.V8, landlock.V9, landlock.V10, landlock.V11,
}

// LandlockABI is the kernel's Landlock ABI version (0: none).
func LandlockABI() int {
	v, err := llsys.LandlockGetABIVersion()
	if err != nil {
		return 0
	}
	return v
}

// landlockConfig is the strictest configuration this kernel enforces for
// p, or an error that says what is missing. Every access right the
// kernel knows is handled, so anything not granted by a rule is denied.
func landlockConfig(p Policy, abi int) (landlock.Config, error) {
	if abi < abiRefer {
		return landlock.Config{}, fmt.Errorf("the kernel's Landlock ABI is %d; the landlock sandbox needs ABI %d or later (Linux 5.19+, with lsm=landlock at boot): upgrade the kernel, or use --sandbox bwrap", abi, abiRefer)
	}
	if !p.Network.Full && abi < abiNetwork {
		return landlock.Config{}, fmt.Errorf("the kernel's Landlock ABI is %d; network policy %q needs ABI %d (Linux 6.7+): use --sandbox bwrap, or --network full", abi, p.Network, abiNetwork)
	}
	cfg := landlockVersions[min(abi, len(landlockVersions))-1]
	if p.Network.Full {
		cfg.HandledAccessNet = 0
	}
	return cfg, nil
}

// landlockRules grants what p allows: reading and executing the
// read-only directories, everything in the workspace and the private
// directory, the harmless devices, and TCP connections to p's ports.
func landlockRules(p Policy) []landlock.Rule {
	rules := []landlock.Rule{
		landlock.RODirs(p.ReadOnly...).IgnoreIfMissing(),
		landlock.RWFiles("/dev/null", "/dev/zero", "/dev/full").IgnoreIfMissing(),
		landlock.ROFiles("/dev/urandom", "/dev/random").IgnoreIfMissing(),
	}
	if rw := writable(p); len(rw) > 0 {
		rules = append(rules, landlock.RWDirs(rw...).WithRefer())
	}
	for _, port := range p.Network.Ports {
		rules = append(rules, landlock.ConnectTCP(port))
	}
	return rules
}

// landlockRestrict confines this process and everything it starts
// afterwards (all threads; sets no_new_privs).
func landlockRestrict(p Policy) error {
	cfg, err := landlockConfig(p, LandlockABI())
	if err != nil {
		return err
	}
	if err := cfg.Restrict(landlockRules(p)...); err != nil {
		return fmt.Errorf("landlock: %w", err)
	}
	return nil
}

// landlockNetOnly confines only TCP connections to p's ports (for bwrap
// with a port list: its namespaces cannot filter ports).
func landlockNetOnly(p Policy) error {
	abi := LandlockABI()
	if abi < abiNetwork {
		return fmt.Errorf("the kernel's Landlock ABI is %d; a port list with bwrap needs Landlock ABI %d (Linux 6.7+) for the ports: use --network none or full", abi, abiNetwork)
	}
	cfg := landlock.Config{HandledAccessNet: landlockVersions[min(abi, len(landlockVersions))-1].HandledAccessNet}
	var rules []landlock.Rule
	for _, port := range p.Network.Ports {
		rules = append(rules, landlock.ConnectTCP(port))
	}
	if err := cfg.RestrictNet(rules...); err != nil {
		return fmt.Errorf("landlock network rules: %w", err)
	}
	return nil
}
