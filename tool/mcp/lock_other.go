//go:build !unix

package mcp

import "sync"

// fileLocks serialises changes to the token file within this process; on
// systems without flock, processes sharing the file are not excluded.
var fileLocks sync.Mutex

func lockFile(string) (unlock func(), err error) {
	fileLocks.Lock()
	return fileLocks.Unlock, nil
}
