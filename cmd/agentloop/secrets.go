package main

import (
	"encoding/json"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// secretsFD names the descriptor the environment's secrets arrive on
// after hideSecrets re-executed the binary.
const secretsFD = "AGENTLOOP_SECRETS_FD"

// isSecretName says whether an environment variable looks like a secret:
// API keys, tokens, passwords.
func isSecretName(name string) bool {
	n := strings.ToUpper(name)
	// _KEY: OPENAI_API_KEY, AGENTLOOP_KEY, …; _HEADERS: OTEL_EXPORTER_OTLP_HEADERS carries a collector's credentials.
	for _, s := range []string{"_KEY", "_TOKEN", "_SECRET", "PASSWORD", "_PASS", "_HEADERS"} {
		if strings.HasSuffix(n, s) {
			return true
		}
	}
	return false
}

// hideSecrets keeps secrets out of this process's environment as the
// kernel shows it (/proc/PID/environ, readable by every command the agent
// runs as the same user): when secret-looking variables are set, the
// binary executes itself again without them — same PID, same arguments —
// and they come through a pipe instead, into the runtime's own copy of the
// environment, which commands never get (the shell tool passes an
// allowlist). It returns only when there is nothing to hide or the
// secrets have been taken in; if re-executing fails, it goes on as is.
func hideSecrets() {
	if fd := os.Getenv(secretsFD); fd != "" {
		takeSecrets(fd)
		return
	}
	var keep []string
	secrets := map[string]string{}
	for _, kv := range os.Environ() {
		name, value, _ := strings.Cut(kv, "=")
		if isSecretName(name) {
			secrets[name] = value
		} else {
			keep = append(keep, kv)
		}
	}
	if len(secrets) == 0 {
		return
	}
	exe, err := os.Executable()
	if err != nil {
		return
	}
	r, w, err := os.Pipe()
	if err != nil {
		return
	}
	b, _ := json.Marshal(secrets)
	if len(b) > 60000 { // more than a pipe holds without a reader
		r.Close()
		w.Close()
		return
	}
	_, werr := w.Write(b)
	w.Close()
	// The read end survives the exec (no close-on-exec); nothing else does.
	if _, _, errno := syscall.Syscall(syscall.SYS_FCNTL, r.Fd(), syscall.F_SETFD, 0); werr != nil || errno != 0 {
		r.Close()
		return
	}
	keep = append(keep, secretsFD+"="+strconv.Itoa(int(r.Fd())))
	err = syscall.Exec(exe, os.Args, keep)
	r.Close() // only reached when the exec failed
	_ = err
}

// takeSecrets reads the secrets hideSecrets sent and sets them in the
// runtime's environment (not the kernel's copy of it).
func takeSecrets(fd string) {
	os.Unsetenv(secretsFD)
	n, err := strconv.Atoi(fd)
	if err != nil || n < 3 {
		return
	}
	f := os.NewFile(uintptr(n), "secrets")
	if f == nil {
		return
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		return
	}
	var secrets map[string]string
	if json.Unmarshal(b, &secrets) != nil {
		return
	}
	for k, v := range secrets {
		os.Setenv(k, v)
	}
}
