package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// openPTY opens a pseudo-terminal pair: the controlling side to read and
// the terminal to hand to a command.
func openPTY(t *testing.T) (ptm, tty *os.File) {
	t.Helper()
	fd, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	ptm = os.NewFile(uintptr(fd), "ptmx")
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	tty, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ptm.Close(); tty.Close() })
	return ptm, tty
}

// On a terminal the status line counts steps against the limit in force,
// appears once a step has started, and shows a model's streamed output
// only under the step it belongs to.
func TestTerminalProgressShowsTheRightStep(t *testing.T) {
	ptm, tty := openPTY(t)
	// Step 1 streams a tool call, step 2 streams text: "writing call"
	// belongs to step 1 only, "writing" (text) to step 2 only.
	script := writeSteps(t,
		`{"tool_calls":[{"name":"list_dir","arguments":{"path":"."}}],"stream_chunk":4}`,
		`{"text":"All files are listed above; nothing else to do here.","stream_chunk":4}`)
	cmd := exec.Command(binary, "run", "--db", filepath.Join(t.TempDir(), "s.db"), "--yes", "--model", "script:"+script, "--dir", t.TempDir(), "list the files")
	cmd.Env = hermeticEnv(t)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, tty
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tty.Close() // the command holds its own copy
	var screen bytes.Buffer
	copied := make(chan struct{})
	go func() { io.Copy(&screen, ptm); close(copied) }() // ends with EIO when the command exits
	if err := cmd.Wait(); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	<-copied
	shown := screen.String()
	statuses := regexp.MustCompile(`Step (\d+)/(\d+) \S+ running · ([^\r\n]*?)\s*(?:\r|\n|$)`).FindAllStringSubmatch(shown, -1)
	if len(statuses) == 0 {
		t.Fatalf("no status line on the terminal: %q", shown)
	}
	for _, m := range statuses {
		step, limit, activity := m[1], m[2], m[3]
		switch {
		case step == "0" || limit == "0":
			t.Errorf("status line %q", m[0])
		case step == "1" && activity == "writing":
			t.Errorf("step 2's text shown under step 1: %q", m[0])
		case step == "2" && strings.HasPrefix(activity, "writing call"):
			t.Errorf("step 1's tool call shown under step 2: %q", m[0])
		}
	}
	if !strings.Contains(shown, fmt.Sprintf("Step 1/%d", 15)) {
		t.Errorf("no step 1 of the default limit: %q", shown)
	}
}
