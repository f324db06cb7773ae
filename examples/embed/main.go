// Embed the agentloop engine in a Go program: a scripted model (swap in
// provider.Open("ollama/qwen3:8b", …) for a real one) works in a temporary
// workspace with the file tools, and every event lands in a store.
package main

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/model/scripted"
	"github.com/agentloop/agentloop/store/memory"
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
	ws, err := workspace.New(dir)
	if err != nil {
		log.Fatal(err)
	}
	m := scripted.Replies(scripted.Call("write_file", `{"path":"hello.txt","content":"hello, world\n"}`), scripted.Text("I wrote hello.txt."))
	store := memory.New() // or sqlite.Open(path): the same Log, on disk
	r, err := loop.New(loop.Config{Model: m, Tools: tool.MustRegistry(fs.Tools(ws)...), Log: store})
	if err != nil {
		log.Fatal(err)
	}
	st, err := r.Run(context.Background(), loop.Task{Prompt: "Write hello.txt"})
	if err == nil { // err: the session could not run or be recorded
		fmt.Printf("%s (%s) after %d steps: %s\n", st.Status, st.Reason, st.CurrentIteration, st.Answer)
		err = st.Err() // not completed: a limit or failure ended it, or it paused
	}
	if cerr := store.Close(); err == nil { // flushes pending appends
		err = cerr
	}
	if err != nil {
		log.Fatal(err)
	}
}
