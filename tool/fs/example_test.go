package fs_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"

	"github.com/agentloop/agentloop/tool"
	"github.com/agentloop/agentloop/tool/fs"
	"github.com/agentloop/agentloop/tool/git"
	"github.com/agentloop/agentloop/tool/shell"
	"github.com/agentloop/agentloop/tool/workspace"
)

// Every workspace tool in one registry: file tools, the shell and git.
func Example() {
	dir, err := os.MkdirTemp("", "ws")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	ws, err := workspace.New(dir)
	if err != nil {
		log.Fatal(err)
	}
	tools := fs.Tools(ws)
	tools = append(tools, shell.New(ws, shell.Config{}))
	tools = append(tools, git.Tools(ws)...)
	reg, err := tool.NewRegistry(tools...)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(reg.Names())

	res := reg.Call(context.Background(), "write_file", json.RawMessage(`{"path": "hello.txt", "content": "hi\n"}`))
	fmt.Println(res.Output)
	res = reg.Call(context.Background(), "read_file", json.RawMessage(`{"path": "../etc/passwd"}`))
	fmt.Println(res.IsError)
	fmt.Println(ws.Changes())
	// Output:
	// [read_file list_dir search write_file edit_file delete_file execute_command git_status git_log git_diff]
	// created hello.txt (1 line, 3 bytes)
	// true
	// [{hello.txt created}]
}
