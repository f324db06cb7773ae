package service_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/model"
	"github.com/agentloop/agentloop/model/scripted"
	"github.com/agentloop/agentloop/sandbox"
	"github.com/agentloop/agentloop/service"
	"github.com/agentloop/agentloop/store/memory"
)

// pausing makes sessions that pause at their first model call (the model
// keeps failing, as an outage would).
func pausing() *scripted.Model {
	return scripted.Replies(scripted.Fail(&model.RetryableError{Err: context.DeadlineExceeded}))
}

// pausedSession starts a session on svc and waits until it paused.
func pausedSession(t *testing.T, svc *service.Service) string {
	t.Helper()
	started, err := svc.Start(t.Context(), acme(all...), loop.Task{Prompt: "x", Mode: loop.ModeSelfReasoning})
	if err != nil {
		t.Fatal(err)
	}
	if st, err := started.Session.Wait(t.Context()); err != nil || st.Status != loop.StatusPaused {
		t.Fatalf("the session is %v (%v), want it paused", st.Status, err)
	}
	return started.ID
}

// A session this service ends without running it, or deletes, loses its
// private sandbox directory; one paused keeps it.
func TestSessionsEndedOrDeletedHereLoseTheirPrivateDirectory(t *testing.T) {
	for _, end := range []string{"terminate", "delete"} {
		t.Run(end, func(t *testing.T) {
			base := t.TempDir()
			svc := newService(t, memory.New(), pausing, "", func(c *service.Config) { c.PrivateDirs = base })
			id := pausedSession(t, svc)
			dir, err := sandbox.PrivateDir(base, id, os.Getuid(), os.Getgid())
			if err != nil {
				t.Fatal(err)
			}
			switch end {
			case "terminate":
				res, err := svc.Terminate(t.Context(), acme(all...), id, "enough")
				if err != nil || res.Outcome != "terminated" || res.State == nil || !res.State.Status.Finished() {
					t.Fatalf("terminate: %+v %v", res, err)
				}
			case "delete":
				if err := svc.Delete(t.Context(), acme(all...), id); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := os.Stat(dir); !os.IsNotExist(err) {
				t.Fatalf("the private directory %s outlived the %s: %v", dir, end, err)
			}
		})
	}
}

// A private directory that cannot be removed does not undo the terminate
// or the delete; the caller is told, and told what to do.
func TestAPrivateDirectoryLeftBehindIsSaid(t *testing.T) {
	base := filepath.Join(t.TempDir(), "not-a-directory")
	if err := os.WriteFile(base, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	svc := newService(t, memory.New(), pausing, "", func(c *service.Config) { c.PrivateDirs = base })

	res, err := svc.Terminate(t.Context(), acme(all...), pausedSession(t, svc), "enough")
	if err != nil || res.State == nil || !res.State.Status.Finished() {
		t.Fatalf("terminate: %+v %v", res, err)
	}
	if res.Outcome != "terminated" || !strings.HasPrefix(res.Warning, "session "+res.ID+" is terminated, but its private sandbox directory in "+base+" could not be removed") || !strings.Contains(res.Warning, "remove it by hand") {
		t.Fatalf("outcome %q, warning %q", res.Outcome, res.Warning)
	}

	id := pausedSession(t, svc)
	err = svc.Delete(t.Context(), acme(all...), id)
	if err == nil || !strings.HasPrefix(err.Error(), "session "+id+" is deleted, but its private sandbox directory in "+base+" could not be removed") || !strings.Contains(err.Error(), "remove it by hand") {
		t.Fatalf("delete: %v", err)
	}
	if _, err := svc.Get(t.Context(), acme(all...), id); service.KindOf(err) != service.ErrNotFound {
		t.Fatalf("after the delete: %v, want the session gone", err)
	}
}

// A private directory a process on this machine still uses is kept by a
// terminate, which says so and what to do.
func TestAPrivateDirectoryInUseIsKeptAndSaid(t *testing.T) {
	base := t.TempDir()
	svc := newService(t, memory.New(), pausing, "", func(c *service.Config) { c.PrivateDirs = base })
	id := pausedSession(t, svc)
	dir, release, err := sandbox.UsePrivateDir(t.Context(), base, id, os.Getuid(), os.Getgid())
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	res, err := svc.Terminate(t.Context(), acme(all...), id, "enough")
	if err != nil || res.State == nil || !res.State.Status.Finished() {
		t.Fatalf("terminate: %+v %v", res, err)
	}
	if !strings.HasPrefix(res.Warning, "session "+id+" is terminated, but its private sandbox directory is kept: "+dir+": a process on this machine still uses it") || !strings.Contains(res.Warning, "remove the directory by hand once that process stops") {
		t.Fatalf("warning %q", res.Warning)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("the directory in use: %v", err)
	}
}
