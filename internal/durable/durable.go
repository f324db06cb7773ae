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
func WriteFile(path string, data []byte) (err error) {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			os.Remove(tmp.Name())
		}
	}()
	// CreateTemp makes the file 0600; said again for a umask-free reader.
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
