// Package durable writes small files that must survive a crash whole: a
// reader, and a process started after a power cut, sees the old content
// or the new one, never a mix or nothing.
package durable

import (
	"os"
	"path/filepath"
)

// WriteFile replaces path with data: written to a new file beside it
// (readable by the owner only from the start), synced, renamed over path,
// and the directory synced so the rename lasts too.
//
// The file beside it is path+".tmp", the same each time: one a crash left
// is written over by the next write rather than left to pile up. Callers
// never write one path from two places at once (a lock or a lease
// orders them).
func WriteFile(path string, data []byte) (err error) {
	dir := filepath.Dir(path)
	tmp, err := os.OpenFile(path+".tmp", os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			os.Remove(tmp.Name())
		}
	}()
	// A .tmp a crash left may have another mode: this one is the owner's.
	if err = tmp.Chmod(0o600); err == nil {
		_, err = tmp.Write(data)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err = os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	return SyncDir(dir)
}

// SyncDir makes a directory's entries (files created, renamed or removed
// in it) durable.
func SyncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}
