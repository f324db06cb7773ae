// Embed the agentloop engine in a Go program: a scripted model (swap in
// provider.Open("ollama/qwen3:8b", …) for a real one) works in a temporary
// workspace with the file tools, and every event lands in a SQLite file.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"

	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/model/scripted"
	"github.com/agentloop/agentloop/store/sqlite"
	"github.com/agentloop/agentloop/tool"
	"github.com/agentloop/agentloop/tool/fs"
	"github.com/agentloop/agentloop/tool/workspace"
)

func main() {
	dir, err := os.MkdirTemp("", "agentloop-embed")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if err := embed(context.Background(), filepath.Join(dir, "sessions.db"), dir, os.Stdout); err != nil {
		log.Fatal(err)
	}
}

// embed runs one session in workspace dir, recorded in the database at db.
func embed(ctx context.Context, db, dir string, out io.Writer) error {
	ws, err := workspace.New(dir)
	if err != nil {
		return err
	}
	store, err := sqlite.Open(db) // or memory.New(): the same Log, in memory
	if err != nil {
		return err
	}
	m := scripted.Replies(scripted.Call("write_file", `{"path":"hello.txt","content":"hello, world\n"}`), scripted.Text("I wrote hello.txt."))
	r, err := loop.New(loop.Config{Model: m, Tools: tool.MustRegistry(fs.Tools(ws)...), Log: store})
	if err == nil {
		var st *loop.State
		st, err = r.Run(ctx, loop.Task{Prompt: "Write hello.txt"})
		if err == nil { // err: the session could not run or be recorded
			fmt.Fprintf(out, "%s (%s) after %d steps: %s\n", st.Status, st.Reason, st.CurrentIteration, st.Answer)
			err = st.Err() // not completed: a limit or failure ended it, or it paused
		}
	}
	// Sessions started with r.Start: r.Wait(ctx, id) waits for one, r.Sync(ctx) for
	// every one. Close the store last: it writes every append still queued.
	return errors.Join(err, store.Close())
}
