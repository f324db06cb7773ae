//go:build unix

package mcp

import (
	"os"
	"syscall"
)

// lockFile takes an exclusive advisory lock on path (created if missing),
// waiting for another holder, in this process or another, to let go.
func lockFile(path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	// Each call opens its own descriptor, so two holders in one process
	// exclude each other as two processes do.
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}
