//go:build !unix

package filelock

import "sync"

// locks orders the holders of each path within this process; on systems
// without flock, processes sharing a file are not excluded.
var (
	mu    sync.Mutex
	locks = map[string]*sync.RWMutex{}
)

func lock(path string, exclusive bool) (unlock func(), err error) {
	mu.Lock()
	l := locks[path]
	if l == nil {
		l = new(sync.RWMutex)
		locks[path] = l
	}
	mu.Unlock()
	if exclusive {
		l.Lock()
		return l.Unlock, nil
	}
	l.RLock()
	return l.RUnlock, nil
}
