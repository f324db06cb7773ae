package sandbox

import (
	"fmt"
	"strings"
)

// refusals are what programs print when the sandbox refused them.
var fsRefusals = []string{"permission denied", "operation not permitted", "read-only file system"}

// hidden is what a program prints for a path bwrap does not show; under
// Landlock a refused path is "permission denied", and a missing file is
// only a missing file.
const hidden = "no such file or directory"

var netRefusals = []string{"network is unreachable", "could not resolve", "temporary failure in name resolution", "name or service not known", "permission denied", "operation not permitted", "connection refused", "no route to host"}

// Rules states the policy in one line, as the model is told it.
func (p Policy) Rules() string {
	if !p.Confined() {
		return ""
	}
	var net string
	switch {
	case p.Network.Full:
		net = "the network is open"
	case p.Network.None():
		net = "the network is off for this session"
	default:
		net = "the network allows only TCP connections to ports " + p.Network.String()
	}
	return fmt.Sprintf("[sandbox] The sandbox allows writes only inside the workspace and $HOME/$TMPDIR (a private directory); other workspaces, the user's files and agentloop's own files cannot be read; %s.", net)
}

// Explain is the line a failed command's result gets when its output
// looks like the sandbox refused it, or "" when it does not.
func (p Policy) Explain(output string) string {
	if !p.Confined() {
		return ""
	}
	low := strings.ToLower(output)
	if p.Backend == Bwrap && strings.Contains(low, hidden) {
		return p.Rules()
	}
	for _, s := range append(fsRefusals, netRefusals...) {
		if strings.Contains(low, s) {
			return p.Rules()
		}
	}
	if strings.Contains(low, "file size limit exceeded") || strings.Contains(low, "resource temporarily unavailable") || strings.Contains(low, "cannot allocate memory") || strings.Contains(low, "out of memory") {
		l := p.WithDefaults().Limits
		return fmt.Sprintf("[sandbox] The sandbox limits each process to %d MB files, %d MB of address space, %d processes and %d s of CPU.", l.FileSizeMB, l.AddressSpaceMB, l.Processes, l.CPUSeconds)
	}
	return ""
}
