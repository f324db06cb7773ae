package assemble

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentloop/agentloop/loop"
	"github.com/agentloop/agentloop/model"
	"github.com/agentloop/agentloop/model/price"
	"github.com/agentloop/agentloop/model/tokens"
	"github.com/agentloop/agentloop/store/sqlite"
	"github.com/agentloop/agentloop/toolcall"
)

// RunnerConfig is the wiring every runner of this process shares: sessions
// resolve through r, tool calls written as text are recovered, costs come
// from prices and missing token counts from the tokenizer. Callers add
// what is theirs (OnDelta, Clock, Stop) and call loop.New.
func (r *Resolver) RunnerConfig(log loop.Log, prices price.Table) loop.Config {
	return loop.Config{
		Log: log, Resolve: r.Resolve,
		ParseToolCalls: ParseToolCalls, Price: prices.Cost, EstimateUsage: EstimateUsage,
	}
}

// ParseToolCalls recovers tool calls models write as text.
func ParseToolCalls(text string, tools []model.ToolSpec) loop.Recovered {
	r := toolcall.Parse(text, toolcall.Options{Tools: tools})
	return loop.Recovered{Calls: r.Calls, Content: r.Content, Format: r.Format, Attempted: r.Attempted, Problem: r.Problem}
}

// EstimateUsage counts a call's tokens with the tokenizer.
func EstimateUsage(req *model.Request, resp *model.Response) model.Usage {
	return tokens.Estimate(req, resp)
}

// Prices returns the built-in price table, extended by the JSON file in
// $AGENTLOOP_PRICES or, failing that, configured (a config file's prices).
func Prices(configured string) (price.Table, error) {
	path := os.Getenv("AGENTLOOP_PRICES")
	if path == "" {
		path = configured
	}
	if path == "" {
		return price.Default(), nil
	}
	t, err := price.Load(path)
	if err != nil {
		return nil, fmt.Errorf("%w (fix the file, or unset AGENTLOOP_PRICES / the config's prices to use the built-in table)", err)
	}
	return t, nil
}

// OpenSQLite opens the session database, creating its directory. Sessions
// hold tasks, code and tool output: the files are the user's alone (0600
// in a 0700 directory it creates).
func OpenSQLite(path string, opts ...sqlite.Option) (*sqlite.Store, error) {
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("cannot create the directory for the session database %s: %w (set --db or AGENTLOOP_DB)", path, err)
		}
	}
	st, err := sqlite.Open(path, opts...)
	if err != nil && cannotWrite(err) {
		// A database this process may only read (its file or directory
		// is not writable): open it to read; writes say why they fail.
		if ro, rerr := sqlite.Open(path, append(opts, sqlite.ReadOnly())...); rerr == nil {
			return ro, nil
		}
	}
	if err != nil {
		return nil, fmt.Errorf("opening session database %s: %w", path, err)
	}
	for _, f := range []string{path, path + "-wal", path + "-shm"} {
		if info, err := os.Stat(f); err == nil && info.Mode().Perm()&0o077 != 0 {
			_ = os.Chmod(f, 0o600) // SQLite gives its -wal and -shm files the database's mode
		}
	}
	return st, nil
}

// cannotWrite tells a database this process may not write from other
// failures to open it.
func cannotWrite(err error) bool {
	msg := strings.ToLower(err.Error())
	return strings.Contains(msg, "readonly") || strings.Contains(msg, "read-only") ||
		strings.Contains(msg, "permission denied") || strings.Contains(msg, "unable to open database file")
}
