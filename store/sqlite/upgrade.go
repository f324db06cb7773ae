package sqlite

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Builds up to SQLite schema 9 kept a session-end journal beside the
// database: a file per open Store (<db>-ends-<pid>-<time>) holding the
// events sessions ended with until their commit landed, committed by the
// next Open if the process died first. This build keeps none. A journal
// left by such a build that holds no events (only its header line) is
// removed, as are the temporary files it made journals under; one that
// holds events is the only copy of those sessions' ends, so Open refuses
// the database — still at its old schema, which the earlier build opens —
// and says how to go on, rather than drop them silently.
const (
	oldJournalSuffix = "-ends-"
	oldJournalTmp    = ".ends-tmp-"
	oldJournalHeader = "agentloop session-end journal v1\n"
)

// refuseEndJournals removes what an earlier build's session-end journals
// left beside the database at dbPath that holds nothing, and fails when a
// journal holds events.
func refuseEndJournals(dbPath string) error {
	dir, base := filepath.Split(dbPath)
	if dir == "" {
		dir = "."
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("sqlite store %s: look for session-end journals of an earlier agentloop: %w", dbPath, err)
	}
	var held []string
	for _, e := range ents {
		n := e.Name()
		if !e.Type().IsRegular() {
			continue
		}
		p := filepath.Join(dir, n)
		switch {
		case strings.HasPrefix(n, base+oldJournalTmp):
			// A journal being made or rewritten: the journal it was to
			// become or replace holds whatever it does.
			os.Remove(p) // left if it cannot be: it holds nothing
		case strings.HasPrefix(n, base+oldJournalSuffix):
			fi, err := e.Info()
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				return fmt.Errorf("sqlite store %s: %w", dbPath, err)
			}
			if fi.Size() <= int64(len(oldJournalHeader)) {
				os.Remove(p)
				continue
			}
			held = append(held, p)
		}
	}
	if len(held) == 0 {
		return nil
	}
	return fmt.Errorf("sqlite store %s: %s: the session-end journal of an earlier agentloop (SQLite schema 9) holds the last events of sessions it had not committed when it stopped. "+
		"Stop any process of that build still using the database and open it once with that build (it commits the events and removes the file), "+
		"or move the file away to open the database without them: those sessions then resume from their logs", dbPath, strings.Join(held, ", "))
}
