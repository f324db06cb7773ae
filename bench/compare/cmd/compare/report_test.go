package main

import (
	"strings"
	"testing"

	"github.com/agentloop/agentloop/bench/compare/harness"
)

func TestSummaryAndTargets(t *testing.T) {
	cs := []contender{{Name: "baseline"}, {Name: "agentloop-sqlite"}, {Name: "eino-react"}}
	res := func(ns, allocs float64) *harness.Result {
		return &harness.Result{NsPerIter: ns, CPUNsPerIter: ns / 2, AllocsPerIter: allocs, BytesPerIter: allocs * 100,
			WallNs: int64(ns * 1000), RSSPerSession: allocs * 1024, HeapPerSession: allocs * 512, SessionsPerSec: 1e9 / ns}
	}
	rounds := []map[string]*harness.Result{
		{"baseline": res(100, 100), "agentloop-sqlite": res(110, 150), "eino-react": res(120, 300)},
		{"baseline": res(200, 100), "agentloop-sqlite": res(260, 150), "eino-react": res(240, 300)},
		{"baseline": res(100, 100), "agentloop-sqlite": res(120, 150), "eino-react": res(130, 300)},
	}
	rep := &report{Date: "2026-01-02T00:00:00Z", Failures: map[string]string{"genkit": "build failed"}}
	rep.Settings.Conc = 1000
	rep.Sequential.Rounds = rounds
	rep.Sequential.Rows = seqRows(cs, rounds)
	rep.Concurrent.Rounds = rounds
	rep.Concurrent.Waiting = rounds[0]
	rep.Concurrent.Rows = concRows(cs, rounds, rep.Concurrent.Waiting)
	rep.Scale = []scaleEntry{{Contender: "agentloop-sqlite", Sessions: 10000, HeapPerSessionKiB: 70}}

	row := rep.Sequential.Rows[1]
	if row.Contender != "agentloop-sqlite" || row.WallRatio.Min != 1.1 || row.WallRatio.Median != 1.2 || row.WallRatio.Max != 1.3 || row.NsPerIter.Median != 120 {
		t.Fatalf("row %+v", row)
	}
	got := map[string]target{}
	rep.Targets = targets(rep)
	for _, tg := range rep.Targets {
		got[tg.Name] = tg
	}
	checks := map[string]bool{
		"sequential wall per iteration, agentloop-sqlite":         false, // 1.20× > 1.15×
		"allocations per iteration, agentloop-sqlite":             true,  // 150 < 300
		"1000 concurrent, wall, agentloop-sqlite":                 true,
		"1000 concurrent, peak RSS per session, agentloop-sqlite": false, // 1.5×
		"10000 waiting sessions, heap each, agentloop-sqlite":     false,
	}
	for name, met := range checks {
		tg, ok := got[name]
		if !ok || tg.Met != met {
			t.Errorf("target %q: %+v (present %v); want met=%v", name, tg, ok, met)
		}
	}
	if !strings.Contains(got["sequential wall per iteration, agentloop-sqlite"].Got, "missed by 4%") {
		t.Errorf("got %q", got["sequential wall per iteration, agentloop-sqlite"].Got)
	}
	md := markdown(rep)
	for _, want := range []string{"| agentloop-sqlite | 0.1 / 0.1 / 0.3 | 1.20× |", "**genkit**: build failed", "## Targets"} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
}

func TestFloorsSetAPlainToolBesideItsCommit(t *testing.T) {
	cs := []contender{{Name: "baseline"}, {Name: "baseline-sqlite-commit"}, {Name: "agentloop-sqlite-plain"}, {Name: "agentloop-memory"}, {Name: "eino-react"}}
	res := func(ns, allocs float64) *harness.Result {
		return &harness.Result{NsPerIter: ns, CPUNsPerIter: ns / 2, AllocsPerIter: allocs}
	}
	rounds := []map[string]*harness.Result{
		{"baseline": res(100, 100), "baseline-sqlite-commit": res(130, 50), "agentloop-sqlite-plain": res(156, 150), "eino-react": res(150, 300), "agentloop-memory": res(110, 120)},
		{"baseline": res(200, 100), "baseline-sqlite-commit": res(250, 50), "agentloop-sqlite-plain": res(325, 150), "eino-react": res(300, 300), "agentloop-memory": res(220, 120)},
		{"baseline": res(100, 100), "baseline-sqlite-commit": res(140, 50), "agentloop-sqlite-plain": res(154, 150), "eino-react": res(150, 300), "agentloop-memory": res(110, 120)},
	}
	rep := &report{}
	rep.Sequential.Rounds = rounds
	rep.Sequential.Rows = seqRows(cs, rounds)
	rep.Sequential.Floors = floorRows(cs, rounds)
	if len(rep.Sequential.Floors) != 1 {
		t.Fatalf("floors %+v", rep.Sequential.Floors)
	}
	f := rep.Sequential.Floors[0]
	// floor/base per round: 1.3, 1.25, 1.4; plain/floor: 1.2, 1.3, 1.1.
	if f.Floor != "baseline-sqlite-commit" || f.FloorRatio.Median != 1.3 || f.Ratio.Median != 1.2 || f.Ratio.Min != 1.1 || f.Ratio.Max != 1.3 {
		t.Fatalf("floor row %+v", f)
	}
	rep.Targets = targets(rep)
	var plain, allocs target
	for _, tg := range rep.Targets {
		switch tg.Name {
		case "sequential wall per iteration, agentloop-sqlite-plain":
			plain = tg
		case "allocations per iteration, agentloop-memory":
			allocs = tg
		}
	}
	if !strings.Contains(plain.Got, "its floor, baseline-sqlite-commit, 1.30×") {
		t.Errorf("plain target %+v", plain)
	}
	// The floors are bare loops, not frameworks: the fewest allocations
	// of the peers is eino's, not the floor's 50.
	if !strings.Contains(allocs.Want, "eino-react, 300") || !allocs.Met {
		t.Errorf("allocations target %+v", allocs)
	}
	md := markdown(rep)
	for _, want := range []string{"### Floors: the commits a durable loop must wait for", "| agentloop-sqlite-plain | baseline-sqlite-commit | 1.30× (rounds 1.25–1.40) | 1.20× (rounds 1.10–1.30) |"} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
}
