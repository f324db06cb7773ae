package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/server"
	"github.com/agentloop/agentloop/service"
)

// demoScript is a scripted model that plans, writes a small shell
// program, runs it and answers. Each step waits its "delay" first, so a
// person who opens the dashboard watches the steps arrive one by one.
const demoScript = `{"description": "agentloop serve --demo", "steps": [
 {"text": "I'll plan the work first.", "tool_calls": [{"name": "update_plan", "arguments": {"action": "create", "goal": "Write and run a hello-world program", "steps": ["Write hello.sh", "Run it", "Report"]}}], "delay": "1s"},
 {"text": "Writing the program.", "tool_calls": [{"name": "write_file", "arguments": {"path": "hello.sh", "content": "#!/bin/sh\n# A hello-world program written by the agentloop demo.\necho \"hello from agentloop\"\necho \"today is $(date +%A)\"\n"}}], "delay": "1500ms"},
 {"tool_calls": [{"name": "update_plan", "arguments": {"action": "update_step", "step": 1, "status": "completed", "result": "hello.sh written"}}], "delay": "800ms"},
 {"text": "Running it.", "tool_calls": [{"name": "execute_command", "arguments": {"command": "sh hello.sh"}}], "delay": "1500ms"},
 {"text": "It printed \"hello from agentloop\" and the day (open the command above for its output).", "tool_calls": [{"name": "update_plan", "arguments": {"action": "update_step", "step": 2, "status": "completed", "result": "it printed its greeting"}}], "delay": "800ms"},
 {"tool_calls": [{"name": "update_plan", "arguments": {"action": "update_step", "step": 3, "status": "completed"}}], "delay": "800ms"},
 {"tool_calls": [{"name": "update_plan", "arguments": {"action": "complete"}}], "delay": "500ms"},
 {"text": "Done: hello.sh prints \"hello from agentloop\". This was a scripted demo model; start your own session with a real one from the form, or run the demo again from the empty session list.", "delay": "1s"}
]}`

// demoStarter starts a demo session for a caller each time it is called
// (serve --demo at startup, and POST /v1/demo from the dashboard's "Run
// the demo" button).
func demoStarter(svc *service.Service, workspaces string, uid, gid int) server.DemoStarter {
	return func(ctx context.Context, caller service.Caller) (string, error) {
		return startDemo(ctx, svc, caller, workspaces, uid, gid)
	}
}

// startDemo starts the demo session in a new workspace and returns its ID.
// uid and gid, when set, are the sandbox user commands run as (a server
// running as root): the workspace is theirs.
func startDemo(ctx context.Context, svc *service.Service, caller service.Caller, workspaces string, uid, gid int) (string, error) {
	dir, err := os.MkdirTemp(workspaces, "demo-")
	if err != nil {
		return "", err
	}
	if uid > 0 {
		if err := os.Chown(dir, uid, gid); err != nil {
			return "", err
		}
	}
	script := filepath.Join(dir, ".demo-model.json")
	if err := os.WriteFile(script, []byte(demoScript), 0o600); err != nil {
		return "", err
	}
	started, err := svc.Start(ctx, caller, loop.Task{Prompt: "Write a hello-world program and run it (a demo with a scripted model)",
		Model: "script:" + script, Workspace: dir, Approval: "auto", Limits: &loop.Limits{MaxIterations: 12}})
	if err != nil {
		return "", fmt.Errorf("starting the demo session: %w", err)
	}
	return started.ID, nil
}
