//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package sqlite

import (
	"os"
	"syscall"
)

// lockFile takes an exclusive lock on f, held until f is closed or the
// process ends, without waiting: it fails when another open file holds it.
func lockFile(f *os.File) error {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
}
