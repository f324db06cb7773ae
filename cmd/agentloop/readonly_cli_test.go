package main

import (
	"database/sql"
	"github.com/agentloop/agentloop/assemble"
	_ "modernc.org/sqlite"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// A session database this user may not write (a shared, read-only copy)
// can still be listed and shown; starting a session there says why not.
func TestReadOnlyDatabaseCanBeRead(t *testing.T) {
	c := newCLI(t)
	script := writeSteps(t, `{"text":"hi"}`)
	if _, stderr, code := c.run("", "run", "--model", "script:"+script, "--dir", t.TempDir(), "say hi"); code != 0 {
		t.Fatalf("run: %s", stderr)
	}
	dir := filepath.Dir(c.db)
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		// Root writes anything: read as nobody instead.
		u, err := user.Lookup("nobody")
		if err != nil {
			t.Skip("running as root without a nobody user")
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		for _, start := range []string{dir, filepath.Dir(binary)} {
			for d := start; d != "/" && d != os.TempDir(); d = filepath.Dir(d) {
				os.Chmod(d, 0o755)
			}
		}
	}
	os.Chmod(c.db, 0o444)
	os.Chmod(dir, 0o555)
	t.Cleanup(func() { os.Chmod(dir, 0o755) })
	as := func(args ...string) (string, string, int) {
		cmd := exec.Command(binary, args...)
		cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME=/nonexistent", "AGENTLOOP_CONFIG=", "AGENTLOOP_DB=", "HOME=/nonexistent")
		if cred != nil {
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		}
		var out, errb strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatalf("cannot run agentloop: %v", err)
		}
		return out.String(), errb.String(), code
	}
	out, stderr, code := as("sessions", "list", "--db", c.db)
	if code != 0 || !strings.Contains(out, "say hi") {
		t.Fatalf("list of a read-only database: %d %s %s", code, out, stderr)
	}
	_, stderr, code = as("run", "--db", c.db, "--model", "script:"+script, "--dir", "/tmp", "again")
	if code == 0 || !strings.Contains(stderr, "read-only") {
		t.Fatalf("a run on a read-only database: %d %s", code, stderr)
	}
}

// One undecodable event does not hide its session: the list shows it, and
// showing it names the event that cannot be read.
func TestCorruptEventKeepsTheSessionListed(t *testing.T) {
	c := newCLI(t)
	script := writeSteps(t, `{"text":"hi"}`)
	if _, stderr, code := c.run("", "run", "--model", "script:"+script, "--dir", t.TempDir(), "say hi"); code != 0 {
		t.Fatalf("run: %s", stderr)
	}
	db, err := sql.Open("sqlite", c.db)
	if err != nil {
		t.Fatal(err)
	}
	var id string
	if err := db.QueryRow(`SELECT id FROM sessions`).Scan(&id); err != nil {
		t.Fatal(err)
	}
	corruptPayload(t, db, id, 2, "{garbage")
	db.Close()
	if out, stderr, code := c.run("", "sessions", "list"); code != 0 || !strings.Contains(out, id) {
		t.Fatalf("list: %d %s %s", code, out, stderr)
	}
	if _, stderr, code := c.run("", "sessions", "show", id); code == 0 || !strings.Contains(stderr, "event 2") || !strings.Contains(stderr, "corrupt payload") {
		t.Fatalf("show: %d %s", code, stderr)
	}
}

// The disk filling up under a session: the run stops with what happened
// and what to do, nothing recorded is lost, and once there is space the
// session resumes and finishes. (A trigger stands in for the full disk,
// with SQLite's own message.)
func TestFullDiskStopsCleanlyAndResumes(t *testing.T) {
	c := newCLI(t)
	st, err := assemble.OpenSQLite(c.db)
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	db, err := sql.Open("sqlite", c.db)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE TRIGGER disk_full BEFORE INSERT ON event_batches WHEN NEW.last_seq > 8 BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END`); err != nil {
		t.Fatal(err)
	}
	script := writeSteps(t,
		`{"tool_calls":[{"name":"write_file","arguments":{"path":"a.txt","content":"a"}}]}`,
		`{"tool_calls":[{"name":"write_file","arguments":{"path":"b.txt","content":"b"}}]}`,
		`{"tool_calls":[{"name":"write_file","arguments":{"path":"c.txt","content":"c"}}]}`,
		`{"text":"wrote a, b and c"}`)
	_, stderr, code := c.run("", "run", "--yes", "--model", "script:"+script, "--dir", t.TempDir(), "write three files")
	if code == 0 || !strings.Contains(stderr, "database or disk is full") || !strings.Contains(stderr, "agentloop sessions resume") {
		t.Fatalf("run on a full disk: %d %s", code, stderr)
	}
	var id string
	var kept int
	db.QueryRow(`SELECT id, last_seq FROM sessions`).Scan(&id, &kept)
	if kept < 1 || kept > 8 {
		t.Fatalf("the log kept %d events; the disk filled at event 9", kept)
	}
	if _, err := db.Exec(`DROP TRIGGER disk_full`); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := c.run("", "sessions", "resume", id); code != 0 {
		t.Fatalf("resume after freeing space: %d %s", code, stderr)
	}
	if s := showJSON(t, c, id); s.Status != "completed" || s.Answer != "wrote a, b and c" {
		t.Fatalf("after resuming: %+v", s)
	}
}

// corruptPayload replaces the payload of event seq of a session in the
// database file, in the stored framing (store/internal/eventbatch: per event a
// line "type version time length", then the payload and a newline).
func corruptPayload(t *testing.T, db *sql.DB, id string, seq int, payload string) {
	t.Helper()
	var rowID, first int
	var batch []byte
	if err := db.QueryRow(`SELECT id, first_seq, events FROM event_batches WHERE session_id = ? AND first_seq <= ? AND last_seq >= ?`, id, seq, seq).Scan(&rowID, &first, &batch); err != nil {
		t.Fatal(err)
	}
	var out []byte
	for i := first; len(batch) > 0; i++ {
		header, rest, _ := strings.Cut(string(batch), "\n")
		fields := strings.Fields(header)
		n, err := strconv.Atoi(fields[3])
		if err != nil {
			t.Fatalf("frame header %q: %v", header, err)
		}
		body := rest[:n]
		if i == seq {
			fields[3], body = strconv.Itoa(len(payload)), payload
		}
		out = append(out, strings.Join(fields, " ")+"\n"+body+"\n"...)
		batch = []byte(rest[n+1:])
	}
	if _, err := db.Exec(`UPDATE event_batches SET events = ? WHERE id = ?`, out, rowID); err != nil {
		t.Fatal(err)
	}
}
