//go:build unix

package checkpoint

import (
	"os"
	"syscall"
)

// lockRoot takes an advisory lock on ROOT/.removal.lock: shared for
// writers of repositories (Save, Fork), exclusive for removals, so no
// repository is removed while a process is writing or forking one — in
// this process or another on the machine. It waits for the other holders.
func (s *Store) lockRoot(exclusive bool) (unlock func(), err error) {
	f, err := os.OpenFile(s.lockPath(), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	how := syscall.LOCK_SH
	if exclusive {
		how = syscall.LOCK_EX
	}
	// Each call opens its own descriptor, so two holders in one process
	// exclude each other as two processes do.
	if err := syscall.Flock(int(f.Fd()), how); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}
