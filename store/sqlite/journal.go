package sqlite

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentloop/agentloop/loop"
)

// A journal holds the appends a session ended with (AppendJournaled) from
// the moment they are written to it until their commit lands: a file
// beside the database, one per open Store, that the next Store to open the
// database commits from if this process died first. Writing an append to
// it is one write(2) — durable against a crash of the process, as a commit
// under synchronous=NORMAL is — where its commit is a transaction of ten
// page writes the session would wait for.
//
// The file is the header line, then records:
//
//	<u32 length of body, little-endian> <u32 CRC-32C of body> <body>
//	body: 'b' <uvarint len(id)> <id> <uvarint first seq> <uvarint count> <frames (batch.go)>
//
// A record cut short by a crash fails its CRC: it and anything after it
// are ignored (its write never returned, so no caller was told it was
// durable). The file is emptied whenever every record in it has landed. A
// record whose commit failed stays, and so does the file when the Store
// closes: the next Open commits it. The file is rewritten without the
// records that landed when this Store deletes one of their sessions, or
// when a commit was refused because the log went on without it; a session
// deleted through another Store leaves a tombstone (deleted_sessions) that
// the next Open heeds — either way a commit from a journal after a crash
// never brings back a deleted session. While the file holds journalMax
// bytes or more, appends are refused (the caller then waits for the
// commit instead) until it is emptied.
//
// Each journal is made under a temporary name, locked (flock) and renamed
// into place, and stays locked by the process that writes it: a journal
// nobody holds is one whose process is gone.
type journal struct {
	path string
	tmp  string      // where it is rewritten before being renamed over path
	perm os.FileMode // the database file's: whoever may open it may read this
	f    *os.File

	mu   sync.Mutex
	size int64
	// recs are the records in the file, in order, until it is emptied.
	recs []*jrecord
	// open counts recs that have not landed.
	open int
	// bySession is closed when the session's last record in flight lands
	// (waited for by reads of the session: see Store.awaitJournaled).
	bySession map[string]*jwait
	broken    error // the file could not be rewritten: nothing more is written to it
}

type jrecord struct {
	session string
	body    []byte // the whole record as written, kept to rewrite the file
	landed  bool
}

type jwait struct {
	n  int
	ch chan struct{}
}

const (
	journalHeader = "agentloop session-end journal v1\n"
	// journalMax bounds a journal's size. A session's end is a few KiB;
	// the file is emptied each time its records have all landed.
	journalMax = 1 << 20
	// journalSuffix joins the database's path and a journal's name.
	journalSuffix = "-ends-"
	// tmpSuffix joins the database's path and the name of a journal being
	// made: it is locked, then renamed to its journal's name, so that no
	// other process ever sees a journal that is not locked yet.
	tmpSuffix = ".ends-tmp-"
	// tmpLitter is how old a temporary file nobody holds must be to be
	// taken for what a crash left: its maker locks it at once.
	tmpLitter = time.Minute
)

var (
	errJournalFull = errors.New("the session-end journal is full until its commits land")
	crcTable       = crc32.MakeTable(crc32.Castagnoli)
)

// openJournal creates this Store's journal beside the database at dbPath
// and locks it.
func openJournal(dbPath string) (*journal, error) {
	id := strconv.Itoa(os.Getpid()) + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	j := &journal{path: dbPath + journalSuffix + id, tmp: dbPath + tmpSuffix + id, perm: 0o644, size: int64(len(journalHeader)), bySession: map[string]*jwait{}}
	// Whoever may open the database may read its journals (another
	// process commits this one should this one die).
	if fi, err := os.Stat(dbPath); err == nil {
		j.perm = fi.Mode().Perm()
	}
	f, err := lockedFile(j.tmp, j.path, []byte(journalHeader), j.perm)
	if err != nil {
		return nil, fmt.Errorf("create the session-end journal %s: %w", j.path, err)
	}
	j.f = f
	return j, nil
}

// lockedFile writes content to a new file at tmp (mode perm), locks it and
// renames it to name (replacing what is there), and returns it open and
// locked.
func lockedFile(tmp, name string, content []byte, perm os.FileMode) (*os.File, error) {
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return nil, err
	}
	if err = lockFile(f); err == nil {
		if _, err = f.Write(content); err == nil {
			err = os.Rename(tmp, name)
		}
	}
	if err != nil {
		f.Close()
		os.Remove(tmp)
		return nil, err
	}
	return f, nil
}

// journalRecord encodes one session's events (in order, from seq
// events[0].Seq) as a journal record, and returns with it each event's
// payload: the bytes of the record that hold it, which the commit writes
// too (the request's Data), so that nothing is encoded twice.
func journalRecord(events []loop.Event) (rec []byte, payloads [][]byte, err error) {
	id := events[0].SessionID
	rec = make([]byte, 8, 72+len(id)+140*len(events)) // length and CRC, then the body
	rec = append(rec, 'b')
	rec = binary.AppendUvarint(rec, uint64(len(id)))
	rec = append(rec, id...)
	rec = binary.AppendUvarint(rec, uint64(events[0].Seq))
	rec = binary.AppendUvarint(rec, uint64(len(events)))
	var payload []byte
	spans := make([][2]int, len(events))
	for i, e := range events {
		if payload, err = e.AppendData(payload[:0]); err != nil {
			return nil, nil, err
		}
		rec = appendFrame(rec, string(e.Type), e.Version, encodeTime(e.Time), payload)
		end := len(rec) - 1 // the frame's closing newline follows its payload
		spans[i] = [2]int{end - len(payload), end}
	}
	body := rec[8:]
	binary.LittleEndian.PutUint32(rec[0:4], uint32(len(body)))
	binary.LittleEndian.PutUint32(rec[4:8], crc32.Checksum(body, crcTable))
	payloads = make([][]byte, len(events))
	for i, sp := range spans { // rec may have moved while it grew
		payloads[i] = rec[sp[0]:sp[1]:sp[1]]
	}
	return rec, payloads, nil
}

// write appends a record of session's and returns once it is in the file.
func (j *journal) write(session string, rec []byte) (*jrecord, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.broken != nil {
		return nil, j.broken
	}
	if j.size+int64(len(rec)) > journalMax {
		return nil, errJournalFull
	}
	if _, err := j.f.WriteAt(rec, j.size); err != nil {
		// Whatever part of it is in the file fails its CRC, and is cut off
		// by the next record's write at the same offset.
		return nil, fmt.Errorf("write the session-end journal %s: %w", j.path, err)
	}
	j.size += int64(len(rec))
	r := &jrecord{session: session, body: rec}
	j.recs = append(j.recs, r)
	j.open++
	w := j.bySession[session]
	if w == nil {
		w = &jwait{ch: make(chan struct{})}
		j.bySession[session] = w
	}
	w.n++
	return r, nil
}

// landed accounts for the commit of r (the record write returned) having
// reported err. A record whose commit failed stays in the file, and the
// file stays when the Store closes: the end is durable only there, and the
// next Store to open the database commits it (skipping it if the session's
// log went on meanwhile, resumed here). One refused because the log went
// on without it (ErrSeqConflict) is taken out: it never will be committed.
func (j *journal) landed(r *jrecord, err error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if w := j.bySession[r.session]; w != nil {
		if w.n--; w.n == 0 {
			close(w.ch)
			delete(j.bySession, r.session)
		}
	}
	conflict := errors.Is(err, loop.ErrSeqConflict)
	if err != nil && !conflict {
		return // kept: the next Store to open the database commits it
	}
	r.landed = true
	j.open--
	switch {
	case j.open == 0:
		j.empty()
	case conflict:
		j.rewrite()
	}
}

// forget makes sure no record of session that landed stays in the file:
// the database is about to lose the session (Delete), and a commit from
// the journal after a crash must not bring it back.
func (j *journal) forget(session string) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.broken == nil && slices.ContainsFunc(j.recs, func(r *jrecord) bool { return r.session == session && r.landed }) {
		j.rewrite()
	}
	if j.broken != nil {
		// The file may still hold the session's end.
		return fmt.Errorf("%w; delete the session again once this process's sessions have ended (the journal is emptied then)", j.broken)
	}
	return nil
}

// inFlight returns channels closed once the records in flight now have
// reported: those of session, or of every session when session is "".
func (j *journal) inFlight(session string) []<-chan struct{} {
	j.mu.Lock()
	defer j.mu.Unlock()
	var chs []<-chan struct{}
	for id, w := range j.bySession {
		if session == "" || id == session {
			chs = append(chs, w.ch)
		}
	}
	return chs
}

// empty truncates the file to its header: every record in it landed. mu
// held.
func (j *journal) empty() {
	if j.size == int64(len(journalHeader)) && j.broken == nil {
		j.forgetRecs()
		return
	}
	// A journal whose rewrite failed is emptied too: truncating needs no
	// room on the disk, and it is whole again after.
	if err := j.f.Truncate(int64(len(journalHeader))); err != nil {
		// The records stay, and the journal knows them: they all landed,
		// so a commit from them after a crash finds them stored.
		if j.broken == nil {
			j.rewrite()
		}
		return
	}
	j.forgetRecs()
	j.size, j.broken = int64(len(journalHeader)), nil
}

// forgetRecs drops the records (the file no longer holds any), and with
// them their bytes. mu held.
func (j *journal) forgetRecs() {
	clear(j.recs)
	j.recs = j.recs[:0]
}

// rewrite replaces the file by one holding only the records that have not
// landed, atomically (a new file renamed over it), so that a crash at any
// point leaves either file whole. mu held.
func (j *journal) rewrite() {
	if j.broken != nil {
		return
	}
	keep := j.recs[:0]
	var buf bytes.Buffer
	buf.WriteString(journalHeader)
	for _, r := range j.recs {
		if !r.landed {
			keep = append(keep, r)
			buf.Write(r.body)
		}
	}
	clear(j.recs[len(keep):])
	j.recs = keep
	f, err := lockedFile(j.tmp, j.path, buf.Bytes(), j.perm)
	if err != nil {
		// The old file stays, with records that landed: a commit from it
		// after a crash skips what is stored, but could bring back a
		// session deleted since. Nothing more is journaled (appends wait
		// for their commits), and Delete reports the failure.
		j.broken = fmt.Errorf("rewrite the session-end journal %s: %w", j.path, err)
		return
	}
	j.f.Close()
	j.f, j.size = f, int64(buf.Len())
}

// close removes the journal when every record in it landed (the writer
// has stopped), or keeps it for the next Store to commit from when a
// commit failed.
func (j *journal) close() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.open == 0 && j.broken == nil {
		os.Remove(j.path)
	}
	return j.f.Close()
}

// jentry is one append read back from a journal.
type jentry struct {
	session string
	first   int64
	count   int
	frames  []byte
}

// readJournal returns the whole records of a journal's contents, in
// order, up to the first that is cut short or damaged.
func readJournal(b []byte) ([]jentry, error) {
	if !bytes.HasPrefix(b, []byte(journalHeader)) {
		if len(b) < len(journalHeader) && bytes.HasPrefix([]byte(journalHeader), b) {
			return nil, nil // the process died writing the header
		}
		return nil, errors.New("not a session-end journal (its first line is not the journal's header)")
	}
	b = b[len(journalHeader):]
	var out []jentry
	for len(b) >= 8 {
		n := binary.LittleEndian.Uint32(b[0:4])
		sum := binary.LittleEndian.Uint32(b[4:8])
		if uint64(n) > uint64(len(b)-8) {
			break // cut short
		}
		body := b[8 : 8+n]
		if crc32.Checksum(body, crcTable) != sum {
			break // torn
		}
		e, ok := decodeBody(body)
		if !ok {
			break
		}
		out = append(out, e)
		b = b[8+n:]
	}
	return out, nil
}

func decodeBody(body []byte) (e jentry, ok bool) {
	if len(body) == 0 || body[0] != 'b' {
		return e, false
	}
	b := body[1:]
	idLen, k := binary.Uvarint(b)
	if k <= 0 || idLen > uint64(len(b)-k) {
		return e, false
	}
	e.session = string(b[k : k+int(idLen)])
	b = b[k+int(idLen):]
	first, k := binary.Uvarint(b)
	if k <= 0 || first == 0 || first > 1<<62 {
		return e, false
	}
	b = b[k:]
	count, k := binary.Uvarint(b)
	if k <= 0 || count == 0 || count > uint64(len(b)) {
		return e, false
	}
	e.first, e.count, e.frames = int64(first), int(count), b[k:]
	return e, true
}

// deadJournals lists the journals beside the database at dbPath other than
// own (which of them are dead is for their locks to tell), and the
// temporary files of journals being made or rewritten.
func deadJournals(dbPath, own string) (journals, tmps []string, err error) {
	dir, base := filepath.Split(dbPath)
	if dir == "" {
		dir = "."
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, err
	}
	for _, e := range ents {
		n := e.Name()
		if !e.Type().IsRegular() {
			continue
		}
		switch p := filepath.Join(dir, n); {
		case strings.HasPrefix(n, base+journalSuffix) && p != own:
			journals = append(journals, p)
		case strings.HasPrefix(n, base+tmpSuffix):
			tmps = append(tmps, p)
		}
	}
	return journals, tmps, nil
}
