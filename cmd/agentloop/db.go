package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentloop/agentloop/assemble"
	"github.com/agentloop/agentloop/store/postgres"
	"github.com/agentloop/agentloop/store/sqlite"
)

const dbUsage = `Usage:
  agentloop db migrate [--db PATH|postgres://USER:PASS@HOST:PORT/DB] [--json]

Brings the session database's schema up to date and says which version it
is at. Servers migrate as they start, too; run this first to migrate once,
before starting several servers on a new PostgreSQL database, or to check
what a database holds. --json prints {"engine", "database", "schema"},
and "from" (the version it found) for PostgreSQL.`

// cmdDB manages the session database.
func cmdDB(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "migrate" {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
			fmt.Fprintln(stdout, dbUsage)
			return 0
		}
		fmt.Fprintln(stderr, dbUsage)
		return exitUsage
	}
	fs := flag.NewFlagSet("db migrate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	db := dbFlag(fs)
	jsonOut := fs.Bool("json", false, `print {"engine", "database", "schema", "from"} as JSON`)
	if code, ok := parseFlags(fs, args[1:]); !ok {
		return code
	}
	if !assemble.IsPostgres(*db) {
		st, err := assemble.OpenSQLite(*db)
		if err != nil {
			return fail(stderr, "%v", err)
		}
		st.Close()
		if *jsonOut {
			return printJSON(stdout, migrated{Engine: "sqlite", Database: *db, Schema: sqlite.SchemaVersion})
		}
		fmt.Fprintf(stdout, "%s: SQLite schema %d (up to date)\n", *db, sqlite.SchemaVersion)
		return 0
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pool, err := pgxpool.New(ctx, *db)
	if err != nil {
		return fail(stderr, "%s: %v", assemble.DescribeDB(*db), err)
	}
	defer pool.Close()
	from, to, err := postgres.Migrate(ctx, pool)
	if err != nil {
		return fail(stderr, "%s: %v", assemble.DescribeDB(*db), err)
	}
	if *jsonOut {
		return printJSON(stdout, migrated{Engine: "postgres", Database: assemble.DescribeDB(*db), Schema: to, From: &from})
	}
	if from == to {
		fmt.Fprintf(stdout, "%s: PostgreSQL schema %d (up to date)\n", assemble.DescribeDB(*db), to)
	} else {
		fmt.Fprintf(stdout, "%s: PostgreSQL schema %d → %d\n", assemble.DescribeDB(*db), from, to)
	}
	return 0
}

// migrated is what db migrate --json prints. From is the version found
// before migrating; SQLite databases migrate as they open, so theirs is
// not known.
type migrated struct {
	Engine   string `json:"engine"`
	Database string `json:"database"` // PostgreSQL's without its password
	Schema   int    `json:"schema"`
	From     *int   `json:"from,omitempty"`
}
