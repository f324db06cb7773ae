package rundb

import (
	"context"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/agentloop/agentloop/store/postgres/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

func TestPostgresMakesAndDropsItsDatabase(t *testing.T) {
	server := pgtest.ServerURL(t)
	dbURL, drop, err := Postgres(t.Context(), server)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(t.Context(), dbURL)
	if err != nil {
		drop()
		t.Fatalf("the run's database %s: %v", dbURL, err)
	}
	var name string
	err = conn.QueryRow(t.Context(), "SELECT current_database()").Scan(&name)
	conn.Close(context.Background())
	if err != nil || name == "postgres" {
		drop()
		t.Fatalf("connected to %q (%v), want the run's own database", name, err)
	}
	if err := drop(); err != nil {
		t.Fatal(err)
	}
	admin, err := pgx.Connect(t.Context(), server)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.Background())
	var left int
	if err := admin.QueryRow(t.Context(), "SELECT count(*) FROM pg_database WHERE datname = $1", name).Scan(&left); err != nil || left != 0 {
		t.Fatalf("database %s left behind (%d, %v)", name, left, err)
	}
}

func TestPostgresRefusesWhatIsNoURL(t *testing.T) {
	if _, _, err := Postgres(t.Context(), "host=/tmp dbname=x"); err == nil {
		t.Fatal("a keyword connection string was taken")
	}
}
