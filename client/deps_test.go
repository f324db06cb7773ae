package client_test

import (
	"os/exec"
	"strings"
	"testing"
)

// The client links the wire types and the standard library, nothing
// else: a program that only talks to a server does not carry one.
func TestClientLinksOnlyTheWireTypes(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".").Output()
	if err != nil {
		t.Skipf("go list: %v", err)
	}
	for _, p := range strings.Fields(string(out)) {
		if p != "github.com/agentloop/agentloop/client" && p != "github.com/agentloop/agentloop/api" {
			t.Errorf("the client links %s", p)
		}
	}
}
