//go:build unix

package sqlite_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/store"
	"github.com/agentloop/agentloop/store/sqlite"
	"github.com/agentloop/agentloop/store/storetest"
)

// The crash test runs this test binary again as a child process that
// appends to a database until the parent kills it with SIGKILL.
const (
	crashDBEnv       = "AGENTLOOP_SQLITE_CRASH_DB"
	crashWriters     = 20
	crashPerWriter   = 2 // sessions per writer goroutine
	crashChildMaxRun = 2 * time.Minute
)

func crashSessionID(writer, i int) string { return fmt.Sprintf("crash-%02d-%d", writer, i) }

// TestCrashChild is the child side of TestCrashRecovery; it does nothing
// in a normal test run. Each writer goroutine continues its sessions from
// where the stored logs end, appending 1–4 synthetic events at a time, and
// prints "ack <session> <seq>" after every append Append reported written.
// It prints "ready" after the first one.
func TestCrashChild(t *testing.T) {
	path := os.Getenv(crashDBEnv)
	if path == "" {
		t.Skip("child process of TestCrashRecovery")
	}
	fail := func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, "crash child: "+format+"\n", args...)
		os.Exit(3)
	}
	s, err := sqlite.Open(path)
	if err != nil {
		fail("%v", err)
	}
	ctx := context.Background()
	list, err := s.List(ctx, store.Filter{})
	if err != nil {
		fail("%v", err)
	}
	last := map[string]int64{}
	for _, sum := range list {
		last[sum.ID] = sum.LastSeq
	}
	var ready sync.Once
	var wg sync.WaitGroup
	for w := range crashWriters {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), uint64(time.Now().UnixNano())))
			seqs := make([]int64, crashPerWriter)
			for i := range seqs {
				seqs[i] = last[crashSessionID(w, i)]
			}
			deadline := time.Now().Add(crashChildMaxRun)
			for i := 0; time.Now().Before(deadline); i = (i + 1) % crashPerWriter {
				id := crashSessionID(w, i)
				n := 1 + int64(rng.IntN(4))
				if err := s.Append(ctx, storetest.FakeEvents(id, seqs[i]+1, seqs[i]+n)...); err != nil {
					fail("append to %s: %v", id, err)
				}
				seqs[i] += n
				// One write per line, so lines from several goroutines
				// never interleave.
				os.Stdout.WriteString("ack " + id + " " + strconv.FormatInt(seqs[i], 10) + "\n")
				ready.Do(func() { os.Stdout.WriteString("ready\n") })
			}
		})
	}
	wg.Wait()
	fail("was not killed within %v", crashChildMaxRun)
}

// TestCrashRecovery kills a child process appending to a database with
// SIGKILL at random moments, many times over the same file, and checks
// after each kill that every log is an exact prefix of what the child was
// writing (contiguous from 1, no torn or duplicated events), that it holds
// at least everything Append acknowledged, that the sessions table agrees
// with the logs, and that the next child continues the logs.
func TestCrashRecovery(t *testing.T) {
	if os.Getenv(crashDBEnv) != "" {
		t.Skip("already the child")
	}
	rounds := 20
	if testing.Short() {
		rounds = 4
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("kill-delay seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	path := tempPath(t)
	acked := map[string]int64{}
	prevTotal := int64(0)
	for round := range rounds {
		out := runAndKill(t, path, time.Duration(rng.IntN(150))*time.Millisecond)
		for id, seq := range out {
			acked[id] = max(acked[id], seq)
		}
		total := verifyCrashDB(t, path, acked)
		if total <= prevTotal {
			t.Fatalf("round %d: no progress (%d events stored, %d before)", round, total, prevTotal)
		}
		t.Logf("round %d: %d events in %d sessions", round, total, len(acked))
		prevTotal = total
	}

	// The parent continues every log too.
	s := open(t, path)
	for id, seq := range acked {
		list, err := s.Load(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		next := int64(len(list)) + 1
		if seq >= next {
			t.Fatalf("%s: acknowledged %d, stored %d", id, seq, next-1)
		}
		mustAppend(t, s, storetest.FakeEvents(id, next, next+2)...)
	}
	s.Close()
	verifyCrashDB(t, path, acked)
}

// runAndKill starts a child on path, waits until it has written, lets it
// run for delay, kills it, and returns the last seq it acknowledged per
// session.
func runAndKill(t *testing.T, path string, delay time.Duration) map[string]int64 {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashDBEnv+"="+path)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	acks := map[string]int64{}
	ready := make(chan struct{})
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		sc := bufio.NewScanner(stdout)
		signalled := false
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			switch {
			case len(f) == 1 && f[0] == "ready" && !signalled:
				signalled = true
				close(ready)
			case len(f) == 3 && f[0] == "ack":
				seq, err := strconv.ParseInt(f[2], 10, 64)
				if err == nil {
					acks[f[1]] = max(acks[f[1]], seq)
				}
			}
		}
		if !signalled {
			close(ready)
		}
	}()
	<-ready
	time.Sleep(delay)
	cmd.Process.Signal(syscall.SIGKILL)
	<-readDone // the pipe holds every ack written before the kill
	err = cmd.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("child did not die by SIGKILL (%v):\n%s", err, stderr.String())
	}
	return acks
}

// verifyCrashDB checks the database after a crash and returns the number
// of events stored.
func verifyCrashDB(t *testing.T, path string, acked map[string]int64) int64 {
	t.Helper()
	db := rawDB(t, path)
	var integrity string
	if err := db.QueryRow("PRAGMA integrity_check").Scan(&integrity); err != nil || integrity != "ok" {
		t.Fatalf("integrity_check: %q %v", integrity, err)
	}
	db.Close()

	s := open(t, path)
	defer s.Close()
	list, err := s.List(t.Context(), store.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	summaries := map[string]loop.Summary{}
	for _, sum := range list {
		summaries[sum.ID] = sum
	}
	for id := range acked {
		if _, ok := summaries[id]; !ok {
			t.Fatalf("%s: acknowledged events but no session row", id)
		}
	}
	var total int64
	for id, sum := range summaries {
		events, err := s.Load(t.Context(), id)
		if err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		n := int64(len(events))
		total += n
		if want := storetest.FakeEvents(id, 1, n); !storetest.EqualEvents(events, want) {
			t.Fatalf("%s: the %d stored events are not a prefix of the log the child wrote", id, n)
		}
		if n < acked[id] {
			t.Fatalf("%s: Append acknowledged up to %d, but only %d events survived the crash", id, acked[id], n)
		}
		var want loop.Summary
		for _, e := range events {
			want.Apply(e)
		}
		sum.CreatedAt, sum.UpdatedAt = sum.CreatedAt.UTC(), sum.UpdatedAt.UTC()
		want.CreatedAt, want.UpdatedAt = want.CreatedAt.UTC(), want.UpdatedAt.UTC()
		if !reflect.DeepEqual(sum, want) {
			t.Fatalf("%s: sessions row disagrees with the log:\n got %+v\nwant %+v", id, sum, want)
		}
	}
	return total
}
