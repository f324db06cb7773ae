package assemble_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/assemble"
	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/model"
	"github.com/agentloop/agentloop/tool"
	"github.com/agentloop/agentloop/tool/workspace"
)

func script(t *testing.T, replies ...string) string {
	t.Helper()
	var steps []string
	for _, r := range replies {
		steps = append(steps, `{"text":"`+r+`"}`)
	}
	path := filepath.Join(t.TempDir(), "script.json")
	if err := os.WriteFile(path, []byte(`{"steps":[`+strings.Join(steps, ",")+`]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	return "script:" + path
}

func resolve(t *testing.T, r *assemble.Resolver, spec *loop.SessionStarted, played int) *loop.Env {
	t.Helper()
	env, err := r.Resolve(t.Context(), spec, &loop.State{Totals: loop.Totals{InteractionCount: played}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(env.Close)
	return env
}

func TestResolveNewToolSession(t *testing.T) {
	dir := t.TempDir()
	var seen *workspace.Workspace
	r := &assemble.Resolver{OnWorkspace: func(_ string, ws *workspace.Workspace) { seen = ws }}
	spec := &loop.SessionStarted{Task: "fix it", Model: script(t, "one", "two"), Mode: loop.ModeTools, Workspace: dir,
		Limits: loop.Limits{MaxIterations: 7}, Verify: []string{"true"}}
	env := resolve(t, r, spec, 1)
	names := env.Tools.Names()
	for _, want := range []string{"read_file", "write_file", "execute_command", "update_plan", "final_answer"} {
		if !slices.Contains(names, want) {
			t.Errorf("tools %v lack %s", names, want)
		}
	}
	if env.Verifier == nil || env.Gate != nil || seen == nil {
		t.Fatalf("verifier %v gate %v workspace %v", env.Verifier, env.Gate, seen)
	}
	if !strings.Contains(env.SystemPrompt, "7") {
		t.Fatalf("the prompt does not state the step limit of 7:\n%s", env.SystemPrompt)
	}
	// Reading runs, changing asks (the default approval mode).
	read, _ := env.Tools.Lookup("read_file")
	write, _ := env.Tools.Lookup("write_file")
	if env.Approval(read) != loop.PolicyAuto || env.Approval(write) != loop.PolicyAsk {
		t.Fatal("default approvals: reading should run and writing ask")
	}
	// The scripted model skips the reply already played.
	resp, err := env.Model.Generate(context.Background(), &model.Request{}, nil)
	if err != nil || resp.Text != "two" {
		t.Fatalf("reply %v %v, want the second one", resp, err)
	}
}

func TestResolveKeepsWhatWasRecorded(t *testing.T) {
	dir := t.TempDir()
	r := &assemble.Resolver{}
	spec := &loop.SessionStarted{Task: "x", Model: script(t, "a"), Mode: loop.ModeTools, Workspace: dir,
		Tools: []string{"read_file", "list_dir"}, SystemPrompt: "recorded prompt", Approval: "auto"}
	env := resolve(t, r, spec, 0)
	if got := strings.Join(env.Tools.Names(), ","); got != "read_file,list_dir" {
		t.Fatalf("tools %s, want the recorded two", got)
	}
	if env.SystemPrompt != "" || env.Approval != nil {
		t.Fatal("a recorded prompt must not be rebuilt, and auto approval asks nothing")
	}
	// A person resuming with --dir elsewhere: the override wins, the spec is untouched.
	other := t.TempDir()
	r.Override = func(s *loop.SessionStarted) { s.Workspace = other }
	var seen string
	r.OnWorkspace = func(_ string, ws *workspace.Workspace) { seen = ws.Root() }
	resolve(t, r, spec, 0)
	if real, _ := filepath.EvalSymlinks(other); seen != real || spec.Workspace != dir {
		t.Fatalf("workspace %s (spec %s), want %s", seen, spec.Workspace, other)
	}
}

func TestResolveModes(t *testing.T) {
	r := &assemble.Resolver{}
	env := resolve(t, r, &loop.SessionStarted{Task: "think", Model: script(t, "a"), Mode: loop.ModeSelfReasoning, Workspace: t.TempDir()}, 0)
	if n := len(env.Tools.Names()); n != 0 {
		t.Fatalf("self-reasoning got %d tools", n)
	}
	env = resolve(t, r, &loop.SessionStarted{Task: "x", Model: script(t, "a"), Mode: loop.ModeSingleShot}, 0)
	if n := len(env.Tools.Names()); n != 0 {
		t.Fatalf("single-shot without a profile got %d tools", n)
	}
}

func TestResolveProtocolOwnsThePlan(t *testing.T) {
	proto, err := filepath.Abs("../examples/protocols/project-map.json")
	if err != nil {
		t.Fatal(err)
	}
	env := resolve(t, &assemble.Resolver{}, &loop.SessionStarted{Task: "map", Model: script(t, "a"), Mode: loop.ModeTools, Workspace: t.TempDir(), Protocol: proto}, 0)
	if env.Gate == nil || slices.Contains(env.Tools.Names(), "update_plan") {
		t.Fatalf("gate %v, tools %v", env.Gate, env.Tools.Names())
	}
}

func TestResolveErrorsSayWhatToDo(t *testing.T) {
	r := &assemble.Resolver{}
	cases := []struct {
		spec loop.SessionStarted
		want string
	}{
		{loop.SessionStarted{Model: script(t, "a"), Profile: "reviewer"}, "no config file is loaded"},
		{loop.SessionStarted{Model: "nosuch/model"}, "unknown provider"},
		{loop.SessionStarted{Model: script(t, "a"), Mode: loop.ModeTools, Workspace: "/does/not/exist"}, "pass an existing directory"},
		{loop.SessionStarted{Model: script(t, "a"), Mode: loop.ModeTools}, "no workspace"},
	}
	for _, c := range cases {
		_, err := r.Resolve(t.Context(), &c.spec, &loop.State{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: err %v, want %q", c.spec, err, c.want)
		}
	}
}

func TestBuiltinToolsDeclareEffects(t *testing.T) {
	ws, err := workspace.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range assemble.Builtin(ws) {
		if tl.Spec().Name == "read_file" && tool.EffectOf(tl) != tool.EffectRead {
			t.Fatal("read_file must be a reading tool")
		}
	}
}
