package service

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// processGone reports whether owner names a process on this machine that
// no longer exists (owner is host:pid:random, see Config.Owner). Its
// leases are then free at once, without waiting for them to expire: a
// killed CLI's session can be recovered immediately. A reused pid only
// makes the caller wait for the expiry, never steals a live lease.
func processGone(owner string) bool {
	parts := strings.Split(owner, ":")
	if len(parts) != 3 {
		return false
	}
	host, _ := os.Hostname()
	pid, err := strconv.Atoi(parts[1])
	if parts[0] != host || err != nil || pid <= 0 {
		return false
	}
	err = syscall.Kill(pid, 0)
	return errors.Is(err, syscall.ESRCH)
}
