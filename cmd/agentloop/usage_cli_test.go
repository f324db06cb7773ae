package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/store/sqlite"
)

// The commands added for several servers and Temporal say what is missing
// and exit 2 before starting anything; db migrate reports the schema.
func TestEngineAndDatabaseCommandsExplainThemselves(t *testing.T) {
	c := newCLI(t)
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", "--db", c.db, "--engine", "temporal"}, "--engine temporal needs --temporal HOST:PORT"},
		{[]string{"serve", "--db", c.db, "--engine", "temporal", "--temporal", "127.0.0.1:7233"}, "needs a PostgreSQL --db"},
		{[]string{"serve", "--db", c.db, "--engine", "kubernetes"}, "--engine is local or temporal"},
		{[]string{"worker", "--db", c.db}, "--temporal HOST:PORT is required"},
		{[]string{"db"}, "agentloop db migrate"},
		{[]string{"keys", "rotate"}, `unknown command "rotate"`},
		{[]string{"keys", "revoke", "--db", c.db}, "name one key id"},
	} {
		_, stderr, code := c.run("", tt.args...)
		if code != exitUsage || !strings.Contains(stderr, tt.want) {
			t.Errorf("agentloop %s: exit %d, %q; want exit 2 saying %q", strings.Join(tt.args, " "), code, stderr, tt.want)
		}
	}
	out, stderr, code := c.run("", "db", "migrate", "--db", c.db)
	if want := fmt.Sprintf("SQLite schema %d (up to date)", sqlite.SchemaVersion); code != 0 || !strings.Contains(out, want) {
		t.Fatalf("db migrate on SQLite: %d %s %s", code, out, stderr)
	}
}
