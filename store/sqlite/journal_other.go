//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package sqlite

import (
	"errors"
	"os"
)

// lockFile is not available here: without a way to tell a live journal
// from a dead one, the Store keeps none, and sessions wait for their
// ends' commits.
func lockFile(*os.File) error { return errors.ErrUnsupported }
