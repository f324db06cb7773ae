package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/agentloop/agentloop/assemble"
	"github.com/agentloop/agentloop/server"
)

// cmdKeys manages the server's API keys.
func cmdKeys(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "create" {
		fmt.Fprintln(stderr, "Usage: agentloop keys create --tenant NAME --role admin|operator|viewer [--name TEXT] [--db PATH]\n\nPrints a new API key once; only its hash is stored.")
		if len(args) == 0 {
			return exitUsage
		}
		if args[0] == "-h" || args[0] == "--help" {
			return 0
		}
		return exitUsage
	}
	fs := flag.NewFlagSet("keys create", flag.ContinueOnError)
	fs.SetOutput(stderr)
	db := dbFlag(fs)
	tenant := fs.String("tenant", "", "the tenant the key acts for")
	role := fs.String("role", "operator", "viewer (reads), operator (starts and controls sessions) or admin")
	name := fs.String("name", "", "what the key is for")
	if code, ok := parseFlags(fs, args[1:]); !ok {
		return code
	}
	secret, k, err := server.NewKey(*tenant, *role, *name, time.Now().UTC())
	if err != nil {
		fmt.Fprintf(stderr, "agentloop keys create: %v\n", err)
		return exitUsage
	}
	st, err := assemble.OpenSQLite(*db)
	if err != nil {
		return fail(stderr, "%v", err)
	}
	defer st.Close()
	if err := st.CreateKey(context.Background(), k); err != nil {
		return fail(stderr, "%v", err)
	}
	fmt.Fprintf(stderr, "key %s for tenant %s, role %s (shown once; keep it secret):\n", k.ID, k.Tenant, k.Role)
	fmt.Fprintln(stdout, secret)
	return 0
}
