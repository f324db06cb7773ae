package nodetest

import (
	"bytes"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Agentloop is the real binary, built for a test, with a hermetic
// environment and a fresh database in the test's temporary directory.
type Agentloop struct {
	Bin string
	Env []string
	DB  string
	Dir string // the test's temporary directory
}

// Build builds cmd/agentloop into a temporary directory of t.
func Build(t testing.TB) *Agentloop {
	t.Helper()
	tmp := t.TempDir()
	a := &Agentloop{Bin: filepath.Join(tmp, "agentloop"), DB: filepath.Join(tmp, "s.db"), Dir: tmp}
	if out, err := exec.Command("go", "build", "-o", a.Bin, filepath.Join(repoRoot(t), "cmd", "agentloop")).CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	a.Env = append(os.Environ(), "XDG_CONFIG_HOME="+tmp, "AGENTLOOP_CONFIG=", "AGENTLOOP_DB=", "AGENTLOOP_MODEL=", "AGENTLOOP_PRICES=")
	if os.Geteuid() == 0 && os.Getenv("AGENTLOOP_SANDBOX") == "" {
		// As root, sandboxed commands run as nobody, who cannot enter the
		// test's root-private temporary directories. The sessions these
		// tests start run no commands; the sandbox has its own tests.
		a.Env = append(a.Env, "AGENTLOOP_SANDBOX=none", "AGENTLOOP_UNSAFE_NO_SANDBOX=1")
	}
	return a
}

// Key creates an API key of the tenant with the role, for a server started
// with --auth keys.
func (a *Agentloop) Key(t testing.TB, tenant, role string) string {
	t.Helper()
	cmd := exec.Command(a.Bin, "keys", "create", "--db", a.DB, "--tenant", tenant, "--role", role)
	cmd.Env = a.Env
	out, err := cmd.Output()
	key := strings.TrimSpace(string(out))
	if err != nil || !strings.HasPrefix(key, "al_") {
		t.Fatalf("keys create --tenant %s --role %s: %v %q", tenant, role, err, out)
	}
	return key
}

var listening = regexp.MustCompile(`listening on (http://[0-9.:]+)`)

// Serve starts `agentloop serve` on a free loopback port with the
// database, scripted models allowed and workspaces in the test's
// directory, plus args; it returns the server's URL once it is ready, and
// stops it (SIGTERM, then waited for) when the test ends.
func (a *Agentloop) Serve(t testing.TB, args ...string) string {
	t.Helper()
	cmd := exec.Command(a.Bin, append([]string{"serve", "--db", a.DB, "--addr", "127.0.0.1:0", "--grace", "10s",
		"--allow-script-models", "--workspaces", filepath.Join(a.Dir, "ws")}, args...)...)
	cmd.Env = a.Env
	var stderr syncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			<-done
			t.Errorf("agentloop serve did not stop on SIGTERM:\n%s", stderr.String())
		}
	})
	// Readiness is what is waited for, not a time: the deadline only
	// bounds a server that never comes up.
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		select {
		case err := <-done:
			t.Fatalf("agentloop serve exited: %v\n%s", err, stderr.String())
		default:
		}
		if m := listening.FindStringSubmatch(stderr.String()); m != nil {
			if resp, err := http.Get(m[1] + "/readyz"); err == nil {
				resp.Body.Close()
				if resp.StatusCode == 200 {
					return m[1]
				}
			}
		}
	}
	t.Fatalf("agentloop serve did not become ready:\n%s", stderr.String())
	return ""
}

// syncBuffer is a bytes.Buffer safe to read while a process writes to it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
