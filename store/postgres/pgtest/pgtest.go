// Package pgtest gives tests a real PostgreSQL server: the one named by
// $AGENTLOOP_TEST_POSTGRES, or one it starts itself from the installed
// PostgreSQL binaries (initdb and postgres, run as an unprivileged user in
// a temporary directory). Each test gets a database of its own.
//
// Without a server the tests skip, saying why; with
// AGENTLOOP_POSTGRES_TESTS set (CI sets it) they fail instead.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentloop/agentloop/internal/testport"
	"github.com/jackc/pgx/v5"
)

var (
	once    sync.Once
	server  string // a URL of the server's postgres database
	why     error  // why there is no server
	stopped = func() {}
)

// Main runs a package's tests and stops the server started for them.
// Call it from TestMain: os.Exit(pgtest.Main(m)).
func Main(m *testing.M) int {
	code := m.Run()
	stopped()
	return code
}

// ServerURL returns the URL of the test server's maintenance database,
// starting the server on first use, or skips (fails in CI) without one.
func ServerURL(t testing.TB) string {
	t.Helper()
	once.Do(func() { server, why = start() })
	if why != nil {
		if os.Getenv("AGENTLOOP_POSTGRES_TESTS") != "" {
			t.Fatalf("AGENTLOOP_POSTGRES_TESTS is set but no PostgreSQL server could be had: %v", why)
		}
		t.Skipf("no PostgreSQL server for this test: %v (install Debian's postgresql package, or set AGENTLOOP_TEST_POSTGRES=postgres://…)", why)
	}
	return server
}

// Own starts a server of the test's own, one it may restart (stopped when
// the test ends), or skips (fails in CI) when none can be started.
func Own(t testing.TB) *Server {
	t.Helper()
	s, err := Start(false)
	if err != nil {
		if os.Getenv("AGENTLOOP_POSTGRES_TESTS") != "" {
			t.Fatalf("AGENTLOOP_POSTGRES_TESTS is set but no PostgreSQL server could be started: %v", err)
		}
		t.Skipf("no PostgreSQL server for this test: %v (install Debian's postgresql package)", err)
	}
	t.Cleanup(s.Stop)
	return s
}

// URL returns the URL of a new, empty database for this test; it is
// dropped when the test ends.
func URL(t testing.TB) string {
	t.Helper()
	base := ServerURL(t)
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "t_" + hex.EncodeToString(b[:])
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatalf("pgtest: connect: %v", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("pgtest: create database: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if conn, err := pgx.Connect(ctx, base); err == nil {
			conn.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
			conn.Close(ctx)
		}
	})
	return withDatabase(base, name)
}

// withDatabase replaces the database of a postgres:// URL.
func withDatabase(url, name string) string {
	rest, query, _ := strings.Cut(url, "?")
	if i := strings.LastIndex(rest, "/"); i > len("postgres://") {
		rest = rest[:i]
	}
	url = rest + "/" + name
	if query != "" {
		url += "?" + query
	}
	return url
}

// start finds or starts a server.
func start() (string, error) {
	if u := os.Getenv("AGENTLOOP_TEST_POSTGRES"); u != "" {
		return u, nil
	}
	url, stop, err := StartServer(false)
	if err == nil {
		stopped = stop
	}
	return url, err
}

// StartServer starts a PostgreSQL server in a temporary directory and
// returns the URL of its postgres database and the function that stops it
// and removes its files. A durable server fsyncs every commit, as a
// production one does (benchmarks want that); tests run without.
func StartServer(durable bool) (url string, stop func(), err error) {
	s, err := Start(durable)
	if err != nil {
		return "", nil, err
	}
	return s.URL, s.Stop, nil
}

// Server is a PostgreSQL server a test started.
type Server struct {
	URL  string
	port int
	bin  string
	dir  string
	args []string
	cred *syscall.Credential
	pg   *exec.Cmd
	// exited is closed when pg's process has exited.
	exited <-chan struct{}
	logf   *os.File
	// lock is dir's owner lock (lockOwner), held until Stop.
	lock *os.File
}

// Start starts a PostgreSQL server in a temporary directory (see StartServer).
func Start(durable bool) (*Server, error) {
	bin, err := binaries()
	if err != nil {
		return nil, err
	}
	removeAbandoned(os.TempDir())
	dir, err := os.MkdirTemp("", dirPrefix)
	if err != nil {
		return nil, err
	}
	lock, err := lockOwner(dir)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	cred, err := runAs(dir)
	if err != nil {
		os.RemoveAll(dir)
		lock.Close()
		return nil, err
	}
	data := filepath.Join(dir, "data")
	initdb := exec.Command(filepath.Join(bin, "initdb"), "-D", data, "-A", "trust", "-U", "agentloop", "-E", "UTF8", "--no-sync")
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if out, err := initdb.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		lock.Close()
		return nil, fmt.Errorf("initdb: %v: %s", err, out)
	}
	base := []string{"-D", data, "-k", dir,
		"-c", "listen_addresses=127.0.0.1", "-c", "max_connections=400", "-c", "shared_buffers=128MB",
		// Messages in English whatever the machine's locale: a port taken
		// is told by its text (run).
		"-c", "lc_messages=C"}
	if !durable {
		// Throwaway data: no fsync.
		base = append(base, "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off")
	}
	s := &Server{bin: bin, dir: dir, cred: cred, lock: lock}
	s.logf, _ = os.Create(filepath.Join(dir, "postgres.log"))
	// A port found free can be taken by another process before the
	// server binds it; then the server is started again on another.
	err = testport.OnFreePorts(1, func(ports []int) error {
		s.URL, s.port = fmt.Sprintf("postgres://agentloop@127.0.0.1:%d/postgres?sslmode=disable", ports[0]), ports[0]
		s.args = append([]string{"-p", strconv.Itoa(ports[0])}, base...)
		return s.run()
	})
	if err != nil {
		s.Stop()
		return nil, err
	}
	return s, nil
}

// run starts the postgres process and waits until it takes connections.
func (s *Server) run() error {
	logged, _ := s.logf.Seek(0, io.SeekCurrent)
	s.pg = exec.Command(filepath.Join(s.bin, "postgres"), s.args...)
	// Its own process group, out of reach of a terminal's Ctrl-C aimed at
	// the tests; a fast shutdown (SIGINT) when its starter is killed.
	s.pg.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred, Setpgid: true}
	s.pg.Stdout, s.pg.Stderr = s.logf, s.logf
	pg := s.pg
	exited, err := testport.StartOwned(pg, syscall.SIGINT)
	if err != nil {
		s.pg = nil
		return fmt.Errorf("start postgres: %v", err)
	}
	s.exited = exited
	connects := func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, s.URL)
		if err == nil {
			conn.Close(context.Background())
		}
		return err == nil
	}
	// This attempt's part of the log, which every attempt shares.
	log := func() []byte {
		b, _ := os.ReadFile(filepath.Join(s.dir, "postgres.log"))
		return b[min(int(logged), len(b)):]
	}
	err = testport.WaitReady(pg.Process.Pid, exited, s.port, 30*time.Second, connects, log, "Address already in use")
	select {
	case <-exited:
		s.pg = nil
	default:
	}
	if err != nil {
		return fmt.Errorf("postgres on port %d: %w", s.port, err)
	}
	return nil
}

// halt stops the postgres process (a fast shutdown: clients are cut off).
func (s *Server) halt() {
	if s.pg == nil {
		return
	}
	s.pg.Process.Signal(syscall.SIGINT)
	select {
	case <-s.exited:
	case <-time.After(10 * time.Second):
		s.pg.Process.Kill()
		<-s.exited
	}
	s.pg = nil
}

// Restart stops the server, every connection cut, waits down for the
// given time, and starts it again on the same data and port.
func (s *Server) Restart(down time.Duration) error {
	s.halt()
	time.Sleep(down)
	return s.run()
}

// Stop stops the server and removes its files.
func (s *Server) Stop() {
	s.halt()
	if s.logf != nil {
		s.logf.Close()
	}
	os.RemoveAll(s.dir)
	if s.lock != nil {
		s.lock.Close()
	}
}

// binaries finds the newest installed PostgreSQL's bin directory.
func binaries() (string, error) {
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p), nil
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool {
		vi, _ := strconv.Atoi(filepath.Base(filepath.Dir(dirs[i])))
		vj, _ := strconv.Atoi(filepath.Base(filepath.Dir(dirs[j])))
		return vi > vj
	})
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d, nil
		}
	}
	return "", fmt.Errorf("PostgreSQL is not installed (no initdb on PATH or in /usr/lib/postgresql/*/bin)")
}

// runAs is who runs the server: PostgreSQL refuses root, so as root the
// server runs as the postgres user (or nobody) and owns dir.
func runAs(dir string) (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	for _, name := range []string{"postgres", "nobody"} {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			return nil, err
		}
		return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
	}
	return nil, fmt.Errorf("running as root and there is no postgres or nobody user to run the server as")
}
