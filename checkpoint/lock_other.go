//go:build !unix

package checkpoint

import "sync"

// rootLocks orders writes and removals within this process; on systems
// without flock, processes sharing a checkpoints directory are not
// excluded.
var rootLocks sync.RWMutex

func (s *Store) lockRoot(exclusive bool) (unlock func(), err error) {
	if exclusive {
		rootLocks.Lock()
		return rootLocks.Unlock, nil
	}
	rootLocks.RLock()
	return rootLocks.RUnlock, nil
}
