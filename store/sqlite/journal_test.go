package sqlite

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/store"
	"github.com/agentloop/agentloop/store/storetest"
)

// deadJournal writes a journal as a process that died would leave it: one
// record per append in appends, then tail (a record cut short, say).
func deadJournal(t *testing.T, dbPath string, appends [][]loop.Event, tail []byte) string {
	t.Helper()
	name := dbPath + journalSuffix + "1-dead"
	b := []byte(journalHeader)
	for _, evs := range appends {
		b = append(b, recordOf(t, evs)...)
	}
	if err := os.WriteFile(name, append(b, tail...), 0o600); err != nil {
		t.Fatal(err)
	}
	return name
}

func recordOf(t *testing.T, evs []loop.Event) []byte {
	t.Helper()
	rec, _, err := journalRecord(evs)
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// openStore opens the store at path, failing the test if it cannot.
func openStore(t *testing.T, path string) *Store {
	t.Helper()
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func journals(t *testing.T, dbPath string) []string {
	t.Helper()
	m, err := filepath.Glob(dbPath + journalSuffix + "*")
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func sameLog(t *testing.T, s *Store, id string, want []loop.Event) {
	t.Helper()
	got, err := s.Load(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("session %s: %d events, want %d", id, len(got), len(want))
	}
	for i := range want {
		g, _ := got[i].AppendData(nil)
		w, _ := want[i].AppendData(nil)
		if got[i].Seq != want[i].Seq || got[i].Type != want[i].Type || !got[i].Time.Equal(want[i].Time) || string(g) != string(w) {
			t.Fatalf("session %s event %d: %+v, want %+v", id, i+1, got[i], want[i])
		}
	}
}

// A journal left by a process that died is committed by the next Open:
// what the log lacks is appended, what it has is skipped, a record cut
// short (its write never returned) is ignored, and the file goes.
func TestOpenCommitsADeadJournal(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.db")
	s := openStore(t, path)
	a, b := storetest.FakeEvents("a", 1, 6), storetest.FakeEvents("b", 1, 6)
	if err := s.Append(t.Context(), a[:3]...); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if j := journals(t, path); len(j) != 0 {
		t.Fatalf("a closed store left journals: %v", j)
	}
	torn := recordOf(t, b[4:])
	dead := deadJournal(t, path, [][]loop.Event{a[:3], a[3:], b[:4]}, torn[:len(torn)-1])

	s = openStore(t, path)
	if _, err := os.Stat(dead); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the dead journal is still there: %v", err)
	}
	sameLog(t, s, "a", a)
	sameLog(t, s, "b", b[:4])
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if j := journals(t, path); len(j) != 0 {
		t.Fatalf("journals left: %v", j)
	}
}

// A journal entry that does not follow its session's log (events missing
// in between) or cannot be read is refused, with the session and what to
// do; the rest of the journal is committed, and the database opens once
// the file is moved away.
func TestOpenRefusesAJournalWithAGap(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.db")
	s := openStore(t, path)
	a := storetest.FakeEvents("a", 1, 8)
	if err := s.Append(t.Context(), a[:3]...); err != nil {
		t.Fatal(err)
	}
	s.Close()
	b, d := storetest.FakeEvents("b", 1, 3), storetest.FakeEvents("d", 1, 2)
	d[1].Type = "no.such.event" // written by a build that knows it
	dead := deadJournal(t, path, [][]loop.Event{a[5:], d, b}, nil)
	_, err := Open(path)
	if err == nil || !strings.Contains(err.Error(), dead) || !strings.Contains(err.Error(), "Move the file away") ||
		!strings.Contains(err.Error(), "session a: events 6–8, but its log ends at event 3") || !strings.Contains(err.Error(), "session d: event 2 cannot be read") {
		t.Fatalf("Open with a journal that skips events: %v", err)
	}
	if _, err := os.Stat(dead); err != nil {
		t.Fatalf("a journal holding events that could not be committed was not kept: %v", err)
	}
	if err := os.Rename(dead, filepath.Join(t.TempDir(), "kept")); err != nil {
		t.Fatal(err)
	}
	s = openStore(t, path)
	sameLog(t, s, "a", a[:3])
	sameLog(t, s, "b", b) // committed by the Open that refused the rest
	s.Close()
}

// The journal of a Store that is open (its process holds the lock) is
// left alone by another Store opening the database.
func TestLiveJournalIsLeftAlone(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.db")
	s1 := openStore(t, path)
	defer s1.Close()
	if s1.j == nil {
		t.Skip("no journal on this platform")
	}
	s2 := openStore(t, path)
	if _, err := os.Stat(s1.j.path); err != nil {
		t.Fatalf("opening the database again took the live journal: %v", err)
	}
	if err := s2.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(s1.j.path); err != nil {
		t.Fatalf("closing another store took the live journal: %v", err)
	}
}

// AppendJournaled returns once the events are in the journal; a read of
// the session waits for their commit; once it lands the journal is
// emptied. A full journal refuses, queuing nothing.
func TestAppendJournaled(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.db")
	s := openStore(t, path)
	defer s.Close()
	if s.j == nil {
		t.Skip("no journal on this platform")
	}
	// Whoever may open the database may read the journal.
	if jf, err := os.Stat(s.j.path); err != nil {
		t.Fatal(err)
	} else if df, err := os.Stat(path); err != nil || jf.Mode().Perm() != df.Mode().Perm() {
		t.Fatalf("journal mode %v, database %v (%v)", jf.Mode().Perm(), df.Mode().Perm(), err)
	}
	a := storetest.FakeEvents("a", 1, 5)
	done := make(chan error, 1)
	if err := s.AppendJournaled(t.Context(), a, func(err error) { done <- err }); err != nil {
		t.Fatal(err)
	}
	sameLog(t, s, "a", a) // waits for the commit
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(s.j.path); string(b) != journalHeader {
		t.Fatalf("journal after its only append landed: %q", b)
	}

	s.j.mu.Lock()
	s.j.size = journalMax
	s.j.mu.Unlock()
	called := false
	err := s.AppendJournaled(t.Context(), storetest.FakeEvents("b", 1, 2), func(error) { called = true })
	if !errors.Is(err, errJournalFull) || called {
		t.Fatalf("a full journal: %v (done called: %v)", err, called)
	}
	if _, err := s.Load(t.Context(), "b"); !errors.Is(err, loop.ErrNotFound) {
		t.Fatalf("a refused journaled append was written: %v", err)
	}
}

// The journal keeps what may still need committing, and only that: a
// session the database forgets (Delete) takes its landed records out of
// the file, and so does a commit refused because the log went on without
// it (a conflict); a commit that failed otherwise (a full disk) keeps its
// record, and the file outlives the Store for the next one to commit from.
func TestJournalKeepsWhatMayNeedCommitting(t *testing.T) {
	dir := t.TempDir()
	j, err := openJournal(filepath.Join(dir, "j.db"))
	if err != nil {
		t.Skip(err)
	}
	rec := func(id string) *jrecord {
		r, err := j.write(id, recordOf(t, storetest.FakeEvents(id, 1, 3)))
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	inFile := func() string {
		b, err := os.ReadFile(j.path)
		if err != nil {
			t.Fatal(err)
		}
		es, err := readJournal(b)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, e := range es {
			ids = append(ids, e.session)
		}
		return strings.Join(ids, ",")
	}
	x, y := rec("x"), rec("y")
	j.landed(x, nil)
	if got := inFile(); got != "x,y" {
		t.Fatalf("after x landed, y not: %v", got)
	}
	if err := j.forget("x"); err != nil {
		t.Fatal(err)
	}
	if got := inFile(); got != "y" {
		t.Fatalf("after x was forgotten: %v", got)
	}
	waits := j.inFlight("y")
	if len(waits) != 1 || len(j.inFlight("x")) != 0 {
		t.Fatal("pending: want y only")
	}
	z := rec("z")
	j.landed(y, fmt.Errorf("session y: %w", loop.ErrSeqConflict))
	if got := inFile(); got != "z" {
		t.Fatalf("after y's commit was refused as a conflict: %v", got)
	}
	select {
	case <-waits[0]:
	default:
		t.Fatal("y's waiters not released")
	}
	w := rec("w")
	j.landed(z, errors.New("disk full"))
	j.landed(w, nil)
	if got := inFile(); got != "z,w" || len(j.inFlight("")) != 0 {
		t.Fatalf("after z's commit failed and w's landed: %v (still waited for: %d)", got, len(j.inFlight("")))
	}
	if err := j.close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(j.path); err != nil {
		t.Fatalf("a journal holding a failed commit's record did not outlive its Store: %v", err)
	}
}

// With every record landed, the journal is emptied, and removed with its
// Store.
func TestJournalEmptiedWhenAllLanded(t *testing.T) {
	j, err := openJournal(filepath.Join(t.TempDir(), "j.db"))
	if err != nil {
		t.Skip(err)
	}
	var recs []*jrecord
	for _, id := range []string{"a", "b"} {
		r, err := j.write(id, recordOf(t, storetest.FakeEvents(id, 1, 2)))
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, r)
	}
	j.landed(recs[0], nil)
	if b, _ := os.ReadFile(j.path); string(b) == journalHeader {
		t.Fatal("emptied with b in flight")
	}
	j.landed(recs[1], nil)
	if b, _ := os.ReadFile(j.path); string(b) != journalHeader || len(j.recs) != 0 {
		t.Fatalf("after every record landed: %q", b)
	}
	if err := j.close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(j.path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("an empty journal outlived its Store: %v", err)
	}
}

// Whatever a journal file holds, reading it never panics and returns only
// whole records.
func FuzzReadJournal(f *testing.F) {
	f.Add([]byte(journalHeader))
	rec, _, err := journalRecord(storetest.FakeEvents("s", 1, 2))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(append([]byte(journalHeader), rec...))
	f.Fuzz(func(t *testing.T, b []byte) {
		es, err := readJournal(b)
		if err != nil {
			return
		}
		for _, e := range es {
			if e.first < 1 || e.count < 1 {
				t.Fatalf("entry %+v", e)
			}
		}
	})
}

// A journal is made (and rewritten) under a temporary name, locked, then
// renamed: a temporary file nobody holds and older than its maker takes to
// lock it is what a crash left, and the next Open removes it; a fresh one
// may be a journal being made, and stays.
func TestOpenRemovesTemporaryLitter(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.db")
	old, fresh := path+tmpSuffix+"1-old", path+tmpSuffix+"1-fresh"
	for _, p := range []string{old, fresh} {
		if err := os.WriteFile(p, []byte(journalHeader), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	then := time.Now().Add(-2 * tmpLitter)
	if err := os.Chtimes(old, then, then); err != nil {
		t.Fatal(err)
	}
	s := openStore(t, path)
	defer s.Close()
	if _, err := os.Stat(old); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("litter left: %v", err)
	}
	if _, err := os.Stat(fresh); err != nil {
		t.Fatalf("a fresh temporary file was taken: %v", err)
	}
	if j := journals(t, path); len(j) != 1 || j[0] != s.j.path {
		t.Fatalf("journals: %v (own %s)", j, s.j.path)
	}
}

// A session deleted through another Store is not brought back by the
// journal of a process that died holding its end: Delete leaves a
// tombstone, the next Open skips the session's entries, and forgets the
// tombstones once no other process's journal is left.
func TestDeletedSessionStaysDeleted(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.db")
	s := openStore(t, path)
	a, c := storetest.FakeEvents("a", 1, 5), storetest.FakeEvents("c", 1, 5)
	for _, evs := range [][]loop.Event{a, c[:3]} {
		if err := s.Append(t.Context(), evs...); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{"a", "c"} {
		if err := s.Delete(t.Context(), id); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	// The dead process's journal: a's whole log (landed before the
	// delete), c's end.
	deadJournal(t, path, [][]loop.Event{a, c[3:]}, nil)
	s = openStore(t, path)
	defer s.Close()
	for _, id := range []string{"a", "c"} {
		if _, err := s.Load(t.Context(), id); !errors.Is(err, loop.ErrNotFound) {
			t.Fatalf("deleted session %s after a dead journal was committed: %v", id, err)
		}
	}
	var n int
	if err := s.rdb.QueryRow(`SELECT count(*) FROM deleted_sessions`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("tombstones left with no journal of another process: %d %v", n, err)
	}
}

// WithoutEndJournal keeps none: no file, and AppendJournaled refuses, so
// the runner commits a session's end before it returns.
func TestWithoutEndJournal(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.db")
	s, err := Open(path, WithoutEndJournal())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if j := journals(t, path); len(j) != 0 {
		t.Fatalf("journals: %v", j)
	}
	called := false
	if err := s.AppendJournaled(t.Context(), storetest.FakeEvents("a", 1, 2), func(error) { called = true }); !errors.Is(err, errNoJournal) || called {
		t.Fatalf("AppendJournaled without a journal: %v (done called: %v)", err, called)
	}
}

// A journal that cannot be rewritten (here: its temporary name is taken)
// refuses Delete's forgetting with what to do and takes no more records —
// the runner then waits for commits — until every record has landed and
// the file is emptied, which makes it whole again.
func TestBrokenJournalRecoversWhenEmptied(t *testing.T) {
	j, err := openJournal(filepath.Join(t.TempDir(), "j.db"))
	if err != nil {
		t.Skip(err)
	}
	defer j.close()
	if err := os.Mkdir(j.tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	rec := func(id string) (*jrecord, error) { return j.write(id, recordOf(t, storetest.FakeEvents(id, 1, 2))) }
	x, _ := rec("x")
	y, _ := rec("y")
	j.landed(x, nil)
	err = j.forget("x")
	if err == nil || !strings.Contains(err.Error(), "rewrite the session-end journal") || !strings.Contains(err.Error(), "delete the session again once") {
		t.Fatalf("forget with the journal unable to be rewritten: %v", err)
	}
	if _, err := rec("z"); err == nil {
		t.Fatal("a broken journal took a record")
	}
	j.landed(y, nil)
	if b, _ := os.ReadFile(j.path); string(b) != journalHeader {
		t.Fatalf("after every record landed: %q", b)
	}
	if _, err := rec("w"); err != nil {
		t.Fatalf("the emptied journal still refuses: %v", err)
	}
}

// A file named as a journal that is not one stops Open, saying which and
// what to do; AppendJournaled on a closed store refuses, calling nothing.
func TestJournalRefusals(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.db")
	s := openStore(t, path)
	s.Close()
	called := false
	if err := s.AppendJournaled(t.Context(), storetest.FakeEvents("a", 1, 2), func(error) { called = true }); (s.j != nil && !errors.Is(err, store.ErrClosed)) || called {
		t.Fatalf("AppendJournaled on a closed store: %v (done called: %v)", err, called)
	}
	odd := path + journalSuffix + "1-odd"
	if err := os.WriteFile(odd, []byte("something else\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(path); err == nil || !strings.Contains(err.Error(), odd) || !strings.Contains(err.Error(), "not a session-end journal") || !strings.Contains(err.Error(), "move the file away") {
		t.Fatalf("Open with a file that is not a journal: %v", err)
	}
}
