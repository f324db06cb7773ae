package main

import (
	"fmt"
	"io"
)

// controlOutcome is what pause and terminate print with --json when the
// session's state is not at hand: the server's answer, or a request the
// process running the session took.
type controlOutcome struct {
	ID      string `json:"id"`
	Outcome string `json:"outcome"`
	Status  string `json:"status,omitempty"`
}

// printOutcome prints a control's outcome, as JSON or as a line.
func printOutcome(o controlOutcome, jsonOut bool, stdout io.Writer) int {
	if jsonOut {
		return printJSON(stdout, o)
	}
	fmt.Fprintf(stdout, "session %s: %s\n", o.ID, o.Outcome)
	return 0
}

// printDeleted says a session was deleted, as JSON or as a line.
func printDeleted(id string, jsonOut bool, stdout io.Writer) int {
	if jsonOut {
		return printJSON(stdout, struct {
			ID      string `json:"id"`
			Deleted bool   `json:"deleted"`
		}{id, true})
	}
	fmt.Fprintf(stdout, "session %s deleted\n", id)
	return 0
}
