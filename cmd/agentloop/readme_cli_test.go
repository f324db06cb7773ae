package main

import (
	"bufio"
	"bytes"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// readmeBlocks returns the shell lines of README.md's ```sh blocks, by the
// section ("## Name", or "" before the first) they are in, comments cut.
func readmeBlocks(t *testing.T) map[string][]string {
	t.Helper()
	f, err := os.Open("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	blocks := map[string][]string{}
	section, in := "", false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "## "):
			section = strings.TrimPrefix(line, "## ")
		case strings.HasPrefix(line, "```sh"):
			in = true
		case strings.HasPrefix(line, "```"):
			in = false
		case in:
			if i := strings.Index(line, " #"); i >= 0 {
				line = line[:i]
			}
			if line = strings.TrimSpace(line); line != "" {
				blocks[section] = append(blocks[section], line)
			}
		}
	}
	return blocks
}

// TestReadmeCommandsWorkAsWritten runs the README's install lines and the
// run lines that need no model or network, exactly as written, on a
// machine with nothing but Go: a fresh HOME, the binary put where
// `go install` puts it, that directory on PATH.
func TestReadmeCommandsWorkAsWritten(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and installs the binary")
	}
	blocks := readmeBlocks(t)
	repo, _ := filepath.Abs("../..")
	home, gobin := t.TempDir(), t.TempDir()
	env := []string{"HOME=" + home, "GOBIN=" + gobin, "PATH=" + gobin + ":" + os.Getenv("PATH"), "XDG_DATA_HOME=", "XDG_CONFIG_HOME=", "AGENTLOOP_DB=", "AGENTLOOP_MODEL=", "AGENTLOOP_CONFIG=", "AGENTLOOP_SERVER="}
	for _, k := range []string{"GOCACHE", "GOMODCACHE", "GOPATH", "GOFLAGS", "GOPROXY"} { // the machine's Go caches, not a fresh download
		out, _ := exec.Command("go", "env", k).Output()
		env = append(env, k+"="+strings.TrimSpace(string(out)))
	}
	sh := func(line string) (string, error) {
		cmd := exec.Command("bash", "-c", line)
		cmd.Dir, cmd.Env = repo, append(os.Environ(), env...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}

	install := blocks["Install"]
	if len(install) == 0 {
		t.Fatal("README.md has no ```sh block under ## Install")
	}
	for _, line := range install {
		out, err := sh(line)
		if err != nil {
			t.Fatalf("README install line %q: %v\n%s", line, err, out)
		}
		t.Logf("$ %s\n%s", line, out)
	}
	if _, err := os.Stat(filepath.Join(gobin, "agentloop")); err != nil {
		t.Fatalf("after the install lines there is no agentloop where go install puts it: %v", err)
	}

	// Run lines that need no model: each must be in the README as written.
	run := strings.Join(blocks["Run"], "\n")
	for _, c := range []struct{ line, want string }{
		{`agentloop run --model script:examples/scripts/hello.json "say hi"`, "Hello"},
		{`agentloop sessions list`, "say hi"},
		{`agentloop config check`, ""},
		{`agentloop prompt --tokens`, "tokens"},
	} {
		if !strings.Contains(run, c.line) {
			t.Fatalf("README's Run section no longer has %q: keep this test in step with it", c.line)
		}
		out, err := sh(c.line)
		if err != nil || !strings.Contains(out, c.want) {
			t.Fatalf("README line %q: %v (want %q in the output)\n%s", c.line, err, c.want, out)
		}
	}
	if _, err := os.Stat(filepath.Join(home, ".local/share/agentloop/sessions.db")); err != nil {
		t.Fatalf("the session went somewhere other than the documented default database: %v", err)
	}

	// The main job, the README's first line: the server and its demo session.
	first := blocks[""]
	if len(first) == 0 || !strings.HasPrefix(first[0], "go run ./cmd/agentloop serve --demo") {
		t.Fatalf("README's first command is %q, not the demo server", first)
	}
	// The demo listens on the README's port: it must be ours to answer.
	if ln, err := net.Listen("tcp", "127.0.0.1:7420"); err != nil {
		t.Skipf("port 7420 is in use here (another agentloop serve?), so the README's first line cannot be checked: %v", err)
	} else {
		ln.Close()
	}
	cmd := exec.Command("bash", "-c", "exec "+first[0])
	cmd.Dir, cmd.Env = repo, append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // go run's child too
	var out syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		// go run exits on the signal at once; the server it started goes
		// on shutting down (its demo session may take a checkpoint, git
		// writing into the home the test removes). So the whole group is
		// waited for, and first: the server holds cmd's output, which
		// cmd.Wait waits to see closed.
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		waitGroupGone(t, cmd.Process.Pid)
		_ = cmd.Wait()
	}()
	url := regexp.MustCompile(`http://127\.0\.0\.1:7420/?`)
	deadline := time.Now().Add(2 * time.Minute)
	for !url.MatchString(out.String()) {
		if time.Now().After(deadline) {
			t.Fatalf("the demo server did not say where it listens:\n%s", out.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, path := range []string{"/", "/v1/sessions"} {
		var body string
		for time.Now().Before(deadline) {
			resp, err := http.Get("http://127.0.0.1:7420" + path)
			if err == nil {
				b := new(strings.Builder)
				_, _ = bufioCopy(b, resp)
				body = b.String()
				if resp.StatusCode == 200 && (path == "/" || strings.Contains(body, `"id"`)) {
					break
				}
			}
			time.Sleep(100 * time.Millisecond)
		}
		if path == "/" && !strings.Contains(body, "agentloop") || path == "/v1/sessions" && !strings.Contains(body, `"id"`) {
			t.Fatalf("GET %s on the demo server: %.300s\n%s", path, body, out.String())
		}
	}
}

// waitGroupGone waits until no process of process group pgid is left
// running, killing the group after 30 s.
func waitGroupGone(t *testing.T, pgid int) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); groupRuns(pgid); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Errorf("process group %d still runs 30 s after SIGTERM: killed", pgid)
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			return
		}
	}
}

// groupRuns reports whether a process of group pgid runs: one that exited
// and waits to be reaped (by whoever adopted it) does not count.
func groupRuns(pgid int) bool {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, f := range stats {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp ...: comm may hold spaces, so the
		// fields are counted from its closing parenthesis.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		fields := strings.Fields(string(b[i+1:]))
		if len(fields) > 2 && fields[0] != "Z" && fields[2] == strconv.Itoa(pgid) {
			return true
		}
	}
	return false
}

func bufioCopy(w *strings.Builder, resp *http.Response) (int64, error) {
	defer resp.Body.Close()
	return bufio.NewReader(resp.Body).WriteTo(w)
}
