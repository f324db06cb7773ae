package sandbox

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
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

// A directory a process uses is left alone, without asking about its
// session, until the process lets it go.
func TestSweepLeavesADirectoryInUse(t *testing.T) {
	base := filepath.Join(t.TempDir(), "private")
	dir, release, err := UsePrivateDir(t.Context(), base, "s1", os.Getuid(), os.Getgid())
	if err != nil {
		t.Fatal(err)
	}
	asked := 0
	over := func(string) (bool, error) { asked++; return true, nil }
	if removed, err := SweepPrivateDirs(base, over); len(removed) != 0 || err != nil || asked != 0 {
		t.Fatalf("in use: removed %q (%v), asked %d times", removed, err, asked)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Fatal(err)
	}
	release()
	if removed, err := SweepPrivateDirs(base, over); !slices.Equal(removed, []string{"s1"}) || err != nil {
		t.Fatalf("let go: removed %q (%v)", removed, err)
	}
}

// A session that resumes while its directory is being removed waits for
// the removal and gets the directory made again, not the one removed; a
// directory in use is not removed by RemovePrivateDir either.
func TestUseWaitsForARemovalAndMakesTheDirectoryAgain(t *testing.T) {
	base := filepath.Join(t.TempDir(), "private")
	dir, err := PrivateDir(base, "s1", os.Getuid(), os.Getgid())
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "home", "old"), nil, 0o600)
	removing, err := lockSession(t.Context(), base, "s1", syscall.LOCK_EX|syscall.LOCK_NB)
	if err != nil {
		t.Fatalf("the remover's lock: %v", err)
	}
	type use struct {
		dir     string
		release func()
		err     error
	}
	got := make(chan use, 1)
	go func() {
		d, r, err := UsePrivateDir(t.Context(), base, "s1", os.Getuid(), os.Getgid())
		got <- use{d, r, err}
	}()
	// Whether or not UsePrivateDir reached the lock yet, it cannot pass
	// it before the removal is done; then, as removeLocked does.
	if err := RemoveTree(dir); err != nil {
		t.Fatal(err)
	}
	os.Remove(lockFile(base, "s1"))
	removing.Close()
	u := <-got
	if u.err != nil {
		t.Fatal(u.err)
	}
	if _, err := os.Stat(filepath.Join(u.dir, "home")); err != nil {
		t.Fatalf("the directory was not made again: %v", err)
	}
	if _, err := os.Stat(filepath.Join(u.dir, "home", "old")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the removed directory's files are back: %v", err)
	}
	if f, err := lockSession(t.Context(), base, "s1", syscall.LOCK_EX|syscall.LOCK_NB); !errors.Is(err, syscall.EWOULDBLOCK) {
		if f != nil {
			f.Close()
		}
		t.Fatalf("the new directory is not marked in use: %v", err)
	}
	if err := RemovePrivateDir(base, "s1"); !errors.Is(err, ErrPrivateDirInUse) || isGone(u.dir) {
		t.Fatalf("RemovePrivateDir of a directory in use: %v (gone: %v)", err, isGone(u.dir))
	}
	// Another use waits while a removal holds the lock, until its
	// context ends.
	removing, err = lockSession(t.Context(), base, "s2", syscall.LOCK_EX|syscall.LOCK_NB)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, _, err := UsePrivateDir(ctx, base, "s2", os.Getuid(), os.Getgid()); err == nil || !strings.Contains(err.Error(), "still being removed") {
		t.Fatalf("a use whose context ended while the directory was being removed: %v", err)
	}
	removing.Close()
	u.release()
	if err := RemovePrivateDir(base, "s1"); err != nil || !isGone(u.dir) || !isGone(lockFile(base, "s1")) {
		t.Fatalf("RemovePrivateDir once let go: %v (directory gone: %v, lock gone: %v)", err, isGone(u.dir), isGone(lockFile(base, "s1")))
	}
}

func isGone(p string) bool {
	_, err := os.Lstat(p)
	return errors.Is(err, os.ErrNotExist)
}

// A base directory that is a symlink, or that other users may write, is
// neither used nor swept.
func TestABaseNotOwnedSafelyIsRefused(t *testing.T) {
	tmp := t.TempDir()
	real := filepath.Join(tmp, "real")
	if _, err := PrivateDir(real, "s1", os.Getuid(), os.Getgid()); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(tmp, "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	yes := func(string) (bool, error) { return true, nil }
	if _, err := PrivateDir(link, "s2", os.Getuid(), os.Getgid()); err == nil || !strings.Contains(err.Error(), "not a directory of this user") {
		t.Errorf("PrivateDir under a symlinked base: %v", err)
	}
	if removed, err := SweepPrivateDirs(link, yes); err == nil || len(removed) != 0 {
		t.Errorf("sweeping a symlinked base: removed %q (%v)", removed, err)
	}
	os.Chmod(real, 0o777)
	if removed, err := SweepPrivateDirs(real, yes); err == nil || !strings.Contains(err.Error(), "writable by other users") || len(removed) != 0 {
		t.Errorf("sweeping a base others may write: removed %q (%v)", removed, err)
	}
	if os.Geteuid() == 0 {
		other := filepath.Join(tmp, "other")
		os.Mkdir(other, 0o711)
		os.Chown(other, Nobody, Nobody)
		if _, err := PrivateDir(other, "s3", Nobody, Nobody); err == nil || !strings.Contains(err.Error(), "not a directory of this user") {
			t.Errorf("PrivateDir under another user's base: %v", err)
		}
	}
}

// A lock file whose directory is gone goes with the next sweep, unless
// in use.
func TestSweepRemovesLockFilesLeftAlone(t *testing.T) {
	base := filepath.Join(t.TempDir(), "private")
	if err := makeBase(base); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"left", "held"} {
		if err := os.WriteFile(lockFile(base, s), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	held, err := lockSession(t.Context(), base, "held", syscall.LOCK_SH)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	if _, err := SweepPrivateDirs(base, func(string) (bool, error) { return true, nil }); err != nil {
		t.Fatal(err)
	}
	if !isGone(lockFile(base, "left")) || isGone(lockFile(base, "held")) {
		t.Fatalf("after the sweep: left gone %v, held gone %v", isGone(lockFile(base, "left")), isGone(lockFile(base, "held")))
	}
}
