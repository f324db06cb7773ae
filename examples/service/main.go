// Run sessions through the control service, the way the CLI and the
// server do: a session is a recorded spec (model, mode, workspace, tools)
// that package assemble resolves, the service owns it under a lease, and
// any number of readers follow its log while another caller controls it.
package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"

	"github.com/agentloop/agentloop/assemble"
	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/model/price"
	"github.com/agentloop/agentloop/service"
)

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, out io.Writer) error {
	dir, err := os.MkdirTemp("", "agentloop-service")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	script := filepath.Join(dir, "script.json")
	if err := os.WriteFile(script, []byte(`{"steps":[
		{"tool_calls":[{"name":"write_file","arguments":{"path":"hello.txt","content":"hello\n"}}]},
		{"text":"I wrote hello.txt."}]}`), 0o600); err != nil {
		return err
	}
	st, err := assemble.OpenSQLite(filepath.Join(dir, "sessions.db"))
	if err != nil {
		return err
	}
	defer st.Close()
	resolver := &assemble.Resolver{}
	svc, err := service.New(service.Config{Store: st, Runner: resolver.RunnerConfig(st, price.Default())})
	if err != nil {
		return err
	}
	defer svc.Close()

	caller := service.Caller{Tenant: "acme", Subject: "ann", Scopes: []service.Scope{service.ScopeRead, service.ScopeWrite, service.ScopeControl}}
	started, err := svc.Start(ctx, caller, loop.Task{Prompt: "Write hello.txt", Model: "script:" + script,
		Workspace: dir, Approval: "auto", Limits: &loop.Limits{MaxIterations: 5}})
	if err != nil {
		return err
	}
	events, err := svc.Events(ctx, caller, started.ID, 0)
	if err != nil {
		return err
	}
	for ev, err := range events {
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "%d %s\n", ev.Seq, ev.Type)
		if ev.Type == loop.TypeSessionEnded {
			break
		}
	}
	final, err := svc.Get(ctx, caller, started.ID)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "%s (%s): %s\n", final.Status, final.Reason, final.Answer)
	return nil
}
