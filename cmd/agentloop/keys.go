package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/agentloop/agentloop/assemble"
	"github.com/agentloop/agentloop/server"
	"github.com/agentloop/agentloop/store"
)

const keysUsage = `Usage:
  agentloop keys create --tenant NAME --role admin|operator|viewer [--name TEXT] [--db PATH] [--json]
  agentloop keys list [--tenant NAME] [--db PATH] [--json]
  agentloop keys revoke [--db PATH] KEY_ID

create prints a new API key once; only its hash is stored. list shows the
keys (never their secrets); revoke stops a key from opening anything.`

// cmdKeys manages the server's API keys.
func cmdKeys(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, keysUsage)
		return exitUsage
	}
	switch args[0] {
	case "create":
		return keysCreate(args[1:], stdout, stderr)
	case "list":
		return keysList(args[1:], stdout, stderr)
	case "revoke":
		return keysRevoke(args[1:], stdout, stderr)
	case "-h", "--help", "help":
		fmt.Fprintln(stdout, keysUsage)
		return 0
	}
	fmt.Fprintf(stderr, "agentloop keys: unknown command %q\n\n%s\n", args[0], keysUsage)
	return exitUsage
}

func keysCreate(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("keys create", flag.ContinueOnError)
	fs.SetOutput(stderr)
	db := dbFlag(fs)
	tenant := fs.String("tenant", "", "the tenant the key acts for")
	role := fs.String("role", "operator", "viewer (reads), operator (starts and controls sessions) or admin")
	name := fs.String("name", "", "what the key is for")
	jsonOut := fs.Bool("json", false, "print the key (with its secret, shown once) as JSON")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	secret, k, err := server.NewKey(*tenant, *role, *name, time.Now().UTC())
	if err != nil {
		fmt.Fprintf(stderr, "agentloop keys create: %v\n", err)
		return exitUsage
	}
	st, err := assemble.OpenStore(*db)
	if err != nil {
		return fail(stderr, "%v", err)
	}
	defer st.Close()
	if err := st.CreateKey(context.Background(), k); err != nil {
		return fail(stderr, "%v", err)
	}
	if *jsonOut {
		return printJSON(stdout, keyJSON{ID: k.ID, Tenant: k.Tenant, Role: k.Role, Name: k.Name, CreatedAt: k.CreatedAt, Secret: secret})
	}
	fmt.Fprintf(stderr, "key %s for tenant %s, role %s (shown once; keep it secret):\n", k.ID, k.Tenant, k.Role)
	fmt.Fprintln(stdout, secret)
	return 0
}

func keysList(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("keys list", flag.ContinueOnError)
	fs.SetOutput(stderr)
	db := dbFlag(fs)
	tenant := fs.String("tenant", "", "only this tenant's keys")
	jsonOut := fs.Bool("json", false, "print the keys as a JSON array (never their secrets or hashes)")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	st, err := assemble.OpenStore(*db)
	if err != nil {
		return fail(stderr, "%v", err)
	}
	defer st.Close()
	keys, err := st.ListKeys(context.Background(), *tenant)
	if err != nil {
		return fail(stderr, "%v", err)
	}
	if *jsonOut {
		out := make([]keyJSON, 0, len(keys))
		for _, k := range keys {
			out = append(out, keyJSON{ID: k.ID, Tenant: k.Tenant, Role: k.Role, Name: k.Name, CreatedAt: k.CreatedAt})
		}
		return printJSON(stdout, out)
	}
	if len(keys) == 0 {
		fmt.Fprintln(stderr, "no keys (make one with agentloop keys create --tenant NAME --role operator)")
		return 0
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tTENANT\tROLE\tNAME\tCREATED")
	for _, k := range keys {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", k.ID, k.Tenant, k.Role, k.Name, k.CreatedAt.Local().Format(time.DateTime))
	}
	tw.Flush()
	return 0
}

// keyJSON is a key as --json prints it: never its hash; the secret only
// from keys create.
type keyJSON struct {
	ID        string    `json:"id"`
	Tenant    string    `json:"tenant"`
	Role      string    `json:"role"`
	Name      string    `json:"name"`
	CreatedAt time.Time `json:"created_at"`
	Secret    string    `json:"secret,omitempty"`
}

func keysRevoke(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("keys revoke", flag.ContinueOnError)
	fs.SetOutput(stderr)
	db := dbFlag(fs)
	jsonOut := fs.Bool("json", false, `print {"id", "revoked": true}`)
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() != 1 {
		fmt.Fprintln(stderr, "agentloop keys revoke: name one key id (agentloop keys list shows them)")
		return exitUsage
	}
	st, err := assemble.OpenStore(*db)
	if err != nil {
		return fail(stderr, "%v", err)
	}
	defer st.Close()
	id := fs.Arg(0)
	if err := st.DeleteKey(context.Background(), "", id); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return fail(stderr, "no key %s (agentloop keys list shows them)", id)
		}
		return fail(stderr, "%v", err)
	}
	if *jsonOut {
		return printJSON(stdout, struct {
			ID      string `json:"id"`
			Revoked bool   `json:"revoked"`
		}{id, true})
	}
	fmt.Fprintf(stderr, "revoked %s\n", id)
	return 0
}
