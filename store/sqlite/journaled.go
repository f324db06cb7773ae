package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/store"
	"github.com/agentloop/agentloop/store/internal/appendq"
)

var _ loop.JournalLog = (*Store)(nil)

var errNoJournal = errors.New("this store keeps no session-end journal")

// AppendJournaled is AppendAsync that returns once the events are durable
// against a crash of this process: written to the Store's journal (see
// journal), from which the next Store to open the database commits them if
// this process dies before their commit lands. Their commit lands behind,
// as AppendAsync's does, and done reports it. When they cannot be
// journaled — the journal is full until its commits land, the events are
// not one session's, the Store keeps no journal — it returns the reason
// having queued nothing and without calling done: the caller appends as
// usual. A journaled append is committed even if ctx ends.
func (s *Store) AppendJournaled(ctx context.Context, events []loop.Event, done func(error)) error {
	if s.j == nil {
		return errNoJournal
	}
	var rec *jrecord // set before the request is queued
	q, err := appendq.New(context.WithoutCancel(ctx), events, false, 0, nil, func(err error) {
		s.j.landed(rec, err)
		done(err)
	})
	if err != nil {
		return err
	}
	switch {
	case q == nil:
		return errors.New("no events to journal")
	case len(q.Runs) != 1:
		return errors.New("a journaled append holds events of one session")
	}
	run := q.Runs[0]
	body, payloads, err := journalRecord(run.Events)
	if err != nil {
		return err
	}
	q.Data = [][][]byte{payloads}
	// The journal is written and the request queued under the read lock
	// Close takes for writing: both happen or neither.
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return fmt.Errorf("sqlite store %s: append to session %s: %w", s.path, run.SessionID, store.ErrClosed)
	}
	if rec, err = s.j.write(run.SessionID, body); err != nil {
		return err
	}
	s.reqs <- &request{Request: q}
	return nil
}

// awaitJournaled waits until the journaled appends in flight now have
// landed — session's, or every session's when session is "" — so that a
// read that follows sees them.
func (s *Store) awaitJournaled(ctx context.Context, session string) error {
	if s.j == nil {
		return nil
	}
	for _, ch := range s.j.inFlight(session) {
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// commitJournals commits what the journals of processes that died hold
// and has not landed, then removes them. A journal whose process lives
// (it holds the lock) is left alone.
func (s *Store) commitJournals(ctx context.Context) error {
	own := ""
	if s.j != nil {
		own = s.j.path
	}
	paths, tmps, err := deadJournals(s.path, own)
	if err != nil {
		return fmt.Errorf("sqlite store %s: look for session-end journals: %w", s.path, err)
	}
	live := 0
	for _, p := range paths {
		alive, err := s.commitJournal(ctx, p)
		if err != nil {
			return err
		}
		if alive {
			live++
		}
	}
	for _, p := range tmps {
		removeLitter(p)
	}
	if live == 0 {
		return s.forgetDeleted(ctx)
	}
	return nil
}

// forgetDeleted empties the tombstones of deleted sessions (schema 9) once
// no journal of another process is left that could hold one of them.
func (s *Store) forgetDeleted(ctx context.Context) error {
	var any int
	err := s.rdb.QueryRowContext(ctx, `SELECT 1 FROM deleted_sessions LIMIT 1`).Scan(&any)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	if err != nil {
		return s.readErr("read the deleted sessions", err)
	}
	return s.exec(ctx, "forget deleted sessions", func(ctx context.Context, w *writer) error {
		_, err := w.conn.ExecContext(ctx, `DELETE FROM deleted_sessions`)
		return err
	})
}

// removeLitter removes a journal's temporary file that a crash left: one
// nobody holds, made longer ago than its maker takes to lock it.
func removeLitter(p string) {
	f, err := os.Open(p)
	if err != nil {
		return
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || time.Since(fi.ModTime()) < tmpLitter || lockFile(f) != nil {
		return
	}
	os.Remove(p)
}

// commitJournal commits the journal at p unless its process is alive.
func (s *Store) commitJournal(ctx context.Context, p string) (alive bool, err error) {
	f, err := os.Open(p) // reading and locking it need no more: it is removed, not written
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("sqlite store %s: open the session-end journal %s: %w", s.path, p, err)
	}
	defer f.Close()
	if lockFile(f) != nil {
		return true, nil
	}
	// The lock is on the file opened; the name may have been given to
	// another (a journal rewritten) since.
	if fi, err := f.Stat(); err != nil {
		return false, nil
	} else if now, err := os.Stat(p); err != nil || !os.SameFile(fi, now) {
		return true, nil
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return false, fmt.Errorf("sqlite store %s: read the session-end journal %s: %w", s.path, p, err)
	}
	entries, err := readJournal(b)
	if err != nil {
		return false, fmt.Errorf("sqlite store %s: %s: %w; move the file away to open the database without it", s.path, p, err)
	}
	var unfit []string
	for _, e := range entries {
		why, err := s.commitEntry(ctx, p, e)
		if err != nil {
			return false, err
		}
		if why != "" {
			unfit = append(unfit, why)
		}
	}
	if len(unfit) > 0 {
		// Kept, as the only copy of those events; everything else in it is
		// committed, and skipped when it is read again.
		return false, fmt.Errorf("sqlite store %s: the session-end journal %s holds events it cannot commit (%s); the rest of it is committed. Move the file away to open the database without them: those sessions resume from their logs", s.path, p, strings.Join(unfit, "; "))
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, fmt.Errorf("sqlite store %s: remove the session-end journal %s: %w", s.path, p, err)
	}
	return false, nil
}

// commitEntry appends what e holds unless the session's log has it already
// (or went on without it), or the session was deleted. why says why e
// could not be committed (its events do not follow the log, or cannot be
// read); err is a failure of the database.
func (s *Store) commitEntry(ctx context.Context, p string, e jentry) (why string, err error) {
	var last int64
	err = s.rdb.QueryRowContext(ctx, `SELECT last_seq FROM sessions WHERE id = ?`, e.session).Scan(&last)
	exists := err == nil
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return "", s.readErr("commit the session-end journal "+p, err)
	}
	if last >= e.first {
		return "", nil
	}
	events := make([]loop.Event, 0, e.count)
	b := e.frames
	for seq := e.first; seq < e.first+int64(e.count); seq++ {
		f, rest, err := nextFrame(b)
		var ev loop.Event
		if err == nil {
			ev, err = loop.DecodeEvent(e.session, seq, loop.EventType(f.typ), f.version, decodeTime(f.at), f.payload)
		}
		if err != nil {
			return fmt.Sprintf("session %s: event %d cannot be read: %v", e.session, seq, err), nil
		}
		events = append(events, ev)
		b = rest
	}
	if !exists {
		// Deleted since (Delete left a tombstone): the session started at
		// this time when the journal holds its start, else any of that ID.
		q, args := `SELECT 1 FROM deleted_sessions WHERE id = ? LIMIT 1`, []any{e.session}
		if e.first == 1 {
			q, args = `SELECT 1 FROM deleted_sessions WHERE id = ? AND created_at = ?`, []any{e.session, encodeTime(events[0].Time)}
		}
		var one int
		switch err := s.rdb.QueryRowContext(ctx, q, args...).Scan(&one); {
		case err == nil:
			return "", nil
		case !errors.Is(err, sql.ErrNoRows):
			return "", s.readErr("commit the session-end journal "+p, err)
		}
	}
	if last != e.first-1 {
		return fmt.Sprintf("session %s: events %d–%d, but its log ends at event %d", e.session, e.first, e.first+int64(e.count)-1, last), nil
	}
	if err := s.Append(ctx, events...); err != nil {
		return "", fmt.Errorf("sqlite store %s: commit the session-end journal %s: %w", s.path, p, err)
	}
	return "", nil
}
