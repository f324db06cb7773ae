package assemble

import (
	"strings"
	"testing"
)

func TestDescribeDBMasksThePassword(t *testing.T) {
	for db, want := range map[string]string{
		"/home/me/sessions.db": "/home/me/sessions.db",
		"postgres://al:hunter2@db:5432/agentloop?sslmode=disable": "postgres://al:xxxxx@db:5432/agentloop?sslmode=disable",
		"postgresql://al@db/agentloop":                            "postgresql://al@db/agentloop",
	} {
		if got := DescribeDB(db); got != want || strings.Contains(got, "hunter2") {
			t.Errorf("DescribeDB(%q) = %q, want %q", db, got, want)
		}
	}
}
