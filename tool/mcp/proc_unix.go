//go:build unix

package mcp

import (
	"os/exec"
	"syscall"
)

// setProcessGroup starts the server in its own process group, so that
// Close can kill the helpers it started too (npx, uvx, shells).
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

func killProcessGroup(cmd *exec.Cmd) {
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
}
