//go:build unix

package providertest

import (
	"syscall"
	"time"
)

// CPU is the CPU time (user + system) this process has used.
func CPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
