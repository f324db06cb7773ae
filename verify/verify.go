// Package verify checks a session's work by running commands (the
// project's tests, a linter) in its workspace: the loop runs them when the
// model says it is done and when a limit ends the session.
package verify

import (
	"context"
	"encoding/json"
	"time"

	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/tool/shell"
	"github.com/agentloop/agentloop/tool/workspace"
)

// Commands is a loop.Verifier that runs shell commands in a workspace; a
// command passes when it exits 0 within its timeout.
type Commands struct {
	shell    *shell.Tool
	commands []string
	clock    func() time.Time
}

// New returns a verifier running commands in ws with the shell tool's
// limits (timeout, output caps, environment allowlist, process-group kill).
func New(ws *workspace.Workspace, commands []string, cfg shell.Config) *Commands {
	return &Commands{shell: shell.New(ws, cfg), commands: commands, clock: time.Now}
}

// Verify runs every command, even after one fails, so the report lists
// what passes and what does not.
func (c *Commands) Verify(ctx context.Context, _ *loop.State) []loop.VerifyCheck {
	checks := make([]loop.VerifyCheck, 0, len(c.commands))
	for _, cmd := range c.commands {
		args, _ := json.Marshal(map[string]string{"command": cmd})
		start := c.clock()
		res, err := c.shell.Call(ctx, args)
		out := res.Output
		if err != nil {
			out += "\n" + err.Error()
		}
		checks = append(checks, loop.VerifyCheck{
			Name: cmd, Passed: err == nil && !res.IsError, Output: out, DurationMS: c.clock().Sub(start).Milliseconds(),
		})
	}
	return checks
}
