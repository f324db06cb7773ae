// Package filelock takes advisory locks on files, so that processes of
// one machine sharing a directory (and goroutines of one process) take
// turns changing it.
package filelock

// Lock takes an advisory lock on path, created if missing: exclusive, or
// shared with other shared holders. It waits for the holders it conflicts
// with, in this process or another; unlock lets go.
func Lock(path string, exclusive bool) (unlock func(), err error) {
	return lock(path, exclusive)
}
