package sandbox

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Only the directories of sessions that are over go; a name that is no
// session id, a symlink, and a session the lookup cannot tell about stay.
func TestSweepRemovesOnlyWhatIsOver(t *testing.T) {
	base := filepath.Join(t.TempDir(), "private")
	for _, s := range []string{"ended-1", "running-1", "unknown-1"} {
		if _, err := PrivateDir(base, s, os.Getuid(), os.Getgid()); err != nil {
			t.Fatal(err)
		}
	}
	// A read-only module cache in an ended session's HOME.
	cache := filepath.Join(base, "ended-1", "home", "go", "pkg", "mod")
	if err := os.MkdirAll(cache, 0o755); err != nil {
		t.Fatal(err)
	}
	os.Chmod(cache, 0o555)
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(base, "ended-link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(base, "not a session"), 0o700); err != nil {
		t.Fatal(err)
	}
	var asked []string
	removed, err := SweepPrivateDirs(base, func(s string) (bool, error) {
		asked = append(asked, s)
		switch s {
		case "unknown-1":
			return false, errors.New("store unreachable")
		case "running-1":
			return false, nil
		}
		return true, nil
	})
	if !slices.Equal(removed, []string{"ended-1"}) {
		t.Errorf("removed %q, want [ended-1]", removed)
	}
	if err == nil || !strings.Contains(err.Error(), "unknown-1") {
		t.Errorf("the lookup's failure was not told: %v", err)
	}
	slices.Sort(asked)
	if !slices.Equal(asked, []string{"ended-1", "running-1", "unknown-1"}) {
		t.Errorf("asked about %q", asked)
	}
	for _, keep := range []string{"running-1", "unknown-1", "ended-link", "not a session"} {
		if _, err := os.Lstat(filepath.Join(base, keep)); err != nil {
			t.Errorf("%s: %v", keep, err)
		}
	}
	if _, err := os.Stat(filepath.Join(base, "ended-1")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the ended session's directory is still there: %v", err)
	}
	if _, err := os.Stat(outside); err != nil {
		t.Errorf("the symlink's target: %v", err)
	}
	if removed, err := SweepPrivateDirs(filepath.Join(base, "none"), nil); removed != nil || err != nil {
		t.Errorf("no base: %q %v", removed, err)
	}
}
