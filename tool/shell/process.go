package shell

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
)

// groupAlive reports whether any process of the group is still running.
// Zombies do not count: where no init reaps orphans (some containers), a
// killed child stays a zombie forever, and it can no longer do anything.
func groupAlive(pgid int) bool {
	if err := syscall.Kill(-pgid, 0); err == syscall.ESRCH {
		return false
	}
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return true // no /proc: trust kill(2), zombies included
	}
	want := []byte(strconv.Itoa(pgid))
	for _, p := range procs {
		if _, err := strconv.Atoi(p.Name()); err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + p.Name() + "/stat")
		if err != nil {
			continue // exited meanwhile
		}
		// pid (comm) state ppid pgrp ...; comm may contain spaces and parens.
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		f := bytes.Fields(stat[i+1:])
		if len(f) < 3 || !bytes.Equal(f[2], want) {
			continue
		}
		if state := f[0]; !bytes.Equal(state, []byte("Z")) && !bytes.Equal(state, []byte("X")) {
			return true
		}
	}
	return false
}
