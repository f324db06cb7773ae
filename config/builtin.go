package config

import (
	"slices"
	"time"
)

// Built-in profiles carry the specifications' own thresholds, to pick by
// name (--profile strict, "profile": "strict") without writing a config
// file. They change no default: a session that names none runs as before,
// and a profile of the same name in the config file replaces the built-in
// one.
var builtinProfiles = map[string]func() Profile{
	// strict: stop early and ask. Stuck pauses for a person at the third
	// repeat of a call with the same result (no nudge first), the session
	// may use 50,000 tokens and 10 minutes (the specifications' budget and
	// their timeout for simple tasks), and 5 steps without a file change
	// end it.
	"strict": func() Profile {
		return Profile{Name: "strict", Description: "stuck pauses at the third repeat; 50,000 tokens; 10 minutes; 10 steps",
			LimitSettings: LimitSettings{MaxIterations: ptr(10), Timeout: ptr(10 * time.Minute), BudgetTokens: ptr(50000),
				StuckRepeats: ptr(3), StuckErrorRepeats: ptr(3), StuckNudge: ptr(false), OnStuck: "pause", NoProgress: ptr(5)}}
	},
	// thorough: room for complex work — 20 steps and 30 minutes (the
	// specifications' complex tier and their timeout for agentic tasks).
	"thorough": func() Profile {
		return Profile{Name: "thorough", Description: "20 steps; 30 minutes",
			LimitSettings: LimitSettings{MaxIterations: ptr(20), Timeout: ptr(30 * time.Minute)}}
	},
}

// Builtin returns the built-in profile of that name.
func Builtin(name string) (Profile, bool) {
	f, ok := builtinProfiles[name]
	if !ok {
		return Profile{}, false
	}
	return f(), true
}

// BuiltinNames lists the built-in profiles, sorted.
func BuiltinNames() []string {
	var names []string
	for n := range builtinProfiles {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

func ptr[T any](v T) *T { return &v }
