//go:build !linux

package sandbox

import (
	"errors"
	"fmt"
	"os/exec"
	"runtime"
)

var errNoBwrap = errors.New("bubblewrap works only on Linux; use --sandbox none here, or run agentloop in a Linux container or VM")

// Confine refuses every backend but none: only Linux has one yet.
func (p Policy) Confine(cmd *exec.Cmd) error {
	if !p.Confined() {
		return nil
	}
	return fmt.Errorf("the %s sandbox works only on Linux, not %s", p.Backend, runtime.GOOS)
}

// LandlockABI is 0: no Landlock here.
func LandlockABI() int { return 0 }

func landlockConfig(Policy, int) (struct{}, error) {
	return struct{}{}, fmt.Errorf("Landlock works only on Linux")
}

// SetNotDumpable does nothing here.
func SetNotDumpable() error { return nil }
