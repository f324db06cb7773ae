// The compare view (#/compare?a=ID&b=ID): two sessions side by side —
// typically a fork (b) and the session it was forked from (a). Their
// outcome and totals, their steps row by row (steps a rewind set aside
// marked), which files differ between their final workspaces and the
// diff from a's to b's, added and removed lines coloured. Everything
// comes from GET /v1/sessions/compare; the two sessions' states are read
// as well only to mark their rewound steps.
"use strict";

// cmpSecs shows a duration from the API (durSecs, fmtSpan, app.js), "—" when
// there is none.
function cmpSecs(d) {
  return d === undefined || d === null || d === "" ? "—" : fmtSpan(durSecs(d) * 1000);
}

function cmpNum(n) { return Number(n || 0).toLocaleString("en-US"); }

function compareView() {
  const p = new URLSearchParams(location.hash.split("?")[1] || "");
  const a = (p.get("a") || "").trim(), b = (p.get("b") || "").trim();
  const inA = el("input", { id: "compare-a", value: a, placeholder: "session id", "aria-label": "Session A", size: "28" });
  const inB = el("input", { id: "compare-b", value: b, placeholder: "session id", "aria-label": "Session B", size: "28" });
  const form = el("form", { class: "row", id: "compare-form", onsubmit: e => {
    e.preventDefault();
    location.hash = "#/compare?" + new URLSearchParams({ a: inA.value.trim(), b: inB.value.trim() });
  } }, el("label", { for: "compare-a" }, "A"), inA, el("label", { for: "compare-b" }, "B"), inB, el("button", { type: "submit", id: "compare-go" }, "Compare"));
  const body = el("div", { id: "compare" });
  main().replaceChildren(el("h1", {}, "Compare two sessions"), form, body);
  if (!a || !b) {
    body.append(el("p", { class: "muted" }, "Give two session ids, or open a fork's session page and follow “compare with original” in its fork tree."));
    return { stop() {} };
  }
  body.append(el("p", { class: "muted" }, "Loading…"));
  let stopped = false;
  const q = "?" + new URLSearchParams({ a, b });
  Promise.all([
    api("GET", "/v1/sessions/compare" + q),
    api("GET", "/v1/sessions/" + encodeURIComponent(a)).catch(() => null),
    api("GET", "/v1/sessions/" + encodeURIComponent(b)).catch(() => null),
  ]).then(([c, sa, sb]) => { if (!stopped) body.replaceChildren(...compareParts(c, sa, sb)); })
    .catch(e => { if (!stopped) body.replaceChildren(el("p", { class: "error", id: "compare-error" }, e.message)); });
  return { stop() { stopped = true; } };
}

// rewoundSteps are a state's steps a rewind set aside, by number (a
// number may have been set aside more than once), each in the compare
// view's step shape. The comparison leaves them out: they are no longer
// part of the session, and are shown here greyed for audit.
function rewoundSteps(st) {
  const by = new Map();
  for (const it of (st && st.iterations) || []) {
    if (!it.rewound) continue;
    const u = it.usage || {};
    if (!by.has(it.number)) by.set(it.number, []);
    by.get(it.number).push({ status: it.status, model: it.model || "", rewound: true, input_tokens: u.input_tokens || 0, output_tokens: u.output_tokens || 0,
      cost_usd: it.cost_usd || 0, duration: it.duration, tool_calls: (it.tool_calls || []).map(c => ({ tool_name: c.tool_name, status: c.status })) });
  }
  return by;
}

function compareParts(c, sa, sb) {
  const A = c.a, B = c.b;
  const fork = (x, y) => x.forked_from && x.forked_from.id === y.id ? x.forked_from.iteration : 0;
  const bFromA = fork(B, A), aFromB = fork(A, B);
  const shared = bFromA || aFromB; // steps 1..shared are one log, copied into the fork
  const role = (x, y) => fork(x, y) ? "fork" : fork(y, x) ? "original" : "";
  const head = (x, y, side) => el("th", { scope: "col", class: "cmp-side" }, side + " ",
    el("a", { href: "#/s/" + x.id, "data-side": side }, x.id), role(x, y) ? el("span", { class: "muted small" }, ` (${role(x, y)})`) : null);

  // Totals: a row per measure; B's cell says how it differs from A's.
  const delta = (x, y, fmt) => {
    const d = (y || 0) - (x || 0);
    if (!d) return null;
    return el("span", { class: "cmp-delta " + (d > 0 ? "up" : "down") }, ` (${d > 0 ? "+" : "−"}${fmt(Math.abs(d))})`);
  };
  const from = x => x.forked_from ? [el("a", { href: "#/s/" + x.forked_from.id }, x.forked_from.id), ` at step ${x.forked_from.iteration}`] : "—";
  const rows = [
    ["Outcome", x => [badge(x.status), x.reason && x.reason !== x.status ? el("span", { class: "muted small" }, " " + x.reason) : null]],
    ["Model", x => el("span", { title: x.model || "" }, shortModel(x.model))],
    ["Forked from", from],
    ["Steps", x => cmpNum(x.steps), (x, y) => delta(x.steps, y.steps, cmpNum)],
    ["Tool calls", x => cmpNum(x.tool_calls), (x, y) => delta(x.tool_calls, y.tool_calls, cmpNum)],
    ["Input tokens", x => cmpNum(x.input_tokens), (x, y) => delta(x.input_tokens, y.input_tokens, cmpNum)],
    ["Output tokens", x => cmpNum(x.output_tokens), (x, y) => delta(x.output_tokens, y.output_tokens, cmpNum)],
    ["Cost", x => fmtCost(x.cost_usd), (x, y) => delta(x.cost_usd, y.cost_usd, v => "$" + v.toFixed(4))],
    ["Duration", x => cmpSecs(x.duration), (x, y) => delta(durSecs(x.duration), durSecs(y.duration), v => cmpSecs(v + "s"))],
    ["Answer", x => x.answer ? el("div", { class: "answer cmp-answer" }, cut(x.answer, 1200)) : el("span", { class: "muted" }, "none")],
  ];
  const totals = el("div", { class: "cmp-scroll" }, el("table", { id: "compare-totals", class: "cmp cmp-totals" },
    el("thead", {}, el("tr", {}, el("th", {}, ""), head(A, B, "A"), head(B, A, "B"))),
    el("tbody", {}, rows.map(([name, cell, d]) => el("tr", { "data-row": name },
      el("th", { scope: "row" }, name), el("td", {}, cell(A)), el("td", {}, cell(B), d ? d(A, B) : null))))));

  // Steps: one row per step number; a side that has no such step is
  // empty. Steps both sessions share (before the fork) are marked so.
  const rwA = rewoundSteps(sa), rwB = rewoundSteps(sb);
  const stepCell = (x, side, sideModel) => {
    if (!x) return el("td", { class: "cmp-none", "data-side": side }, "—");
    const calls = x.tool_calls || [];
    return el("td", { class: "cmp-step" + (x.rewound ? " rewound" : ""), "data-side": side },
      el("div", { class: "row" }, el("span", { class: "cmp-status cmp-" + x.status }, x.status),
        x.rewound ? el("span", { class: "rewound-tag" }, "rewound") : null,
        // A step done by another model than the session's (a fallback).
        x.model && x.model !== sideModel ? el("span", { class: "muted small", title: x.model }, shortModel(x.model)) : null),
      calls.length ? el("div", { class: "cmp-calls" }, calls.map(t => el("span", { class: "cmp-call" + (t.status === "error" ? " err" : ""), title: t.status }, t.tool_name))) : el("div", { class: "muted small" }, "no tool calls"),
      el("div", { class: "muted small cmp-nums" }, `${cmpNum((x.input_tokens || 0) + (x.output_tokens || 0))} tok · ${fmtCost(x.cost_usd)} · ${cmpSecs(x.duration)}`));
  };
  const stepRows = [];
  const numbers = [...new Set([...(c.steps || []).map(s => s.number), ...rwA.keys(), ...rwB.keys()])].sort((x, y) => x - y);
  const live = new Map((c.steps || []).map(s => [s.number, s]));
  for (const n of numbers) {
    // The tries of step n a rewind set aside come first (they ran
    // first), then the live step n.
    const ra = rwA.get(n) || [], rb = rwB.get(n) || [];
    for (let i = 0; i < Math.max(ra.length, rb.length); i++) {
      stepRows.push(el("tr", { "data-step": String(n), class: "cmp-rewound" },
        el("th", { scope: "row" }, String(n), el("div", { class: "small" }, "set aside")), stepCell(ra[i], "a", A.model), stepCell(rb[i], "b", B.model)));
    }
    const s = live.get(n);
    if (!s) continue;
    stepRows.push(el("tr", { "data-step": String(n), class: shared && n <= shared ? "cmp-shared" : "cmp-live" },
      el("th", { scope: "row" }, String(n), shared && n <= shared ? el("div", { class: "muted small" }, "shared") : null),
      stepCell(s.a, "a", A.model), stepCell(s.b, "b", B.model)));
    if (shared && s.number === shared) {
      stepRows.push(el("tr", { class: "cmp-forkpoint" }, el("td", { colspan: 3 }, `${bFromA ? "B" : "A"} was forked from ${bFromA ? "A" : "B"} here, after step ${shared}.`)));
    }
  }
  const steps = el("div", { class: "cmp-scroll" }, el("table", { id: "compare-steps", class: "cmp" },
    el("thead", {}, el("tr", {}, el("th", { scope: "col" }, "Step"), el("th", { scope: "col", class: "cmp-side" }, "A"), el("th", { scope: "col", class: "cmp-side" }, "B"))),
    el("tbody", {}, stepRows)));

  const files = c.files || [];
  const whence = x => ({ directory: "its workspace directory as it is now", checkpoint: "its last checkpoint (the directory is gone)", none: "no files (no workspace and no checkpoint)" })[x.workspace];
  return [
    el("h2", {}, "Outcome and totals"), totals,
    el("h2", {}, `Steps (${(c.steps || []).length})`), steps,
    el("h2", {}, "Final workspaces"),
    A.workspace && B.workspace ? el("p", { class: "muted small", id: "compare-whence" }, `A: ${whence(A)}. B: ${whence(B)}.`) : null,
    files.length ? [el("p", {}, `${files.length} file${files.length === 1 ? " differs" : "s differ"} from A's workspace to B's:`),
      el("ul", { class: "chg-list", id: "compare-files" }, files.map(f => el("li", { "data-path": f.path, "data-change": f.change },
        el("span", { class: "chg chg-" + f.change }, f.change), " ", el("code", {}, f.path))))]
      : el("p", { id: "compare-files", class: "muted" }, "The two final workspaces hold the same files."),
    c.diff ? udiff(c.diff) : null,
    c.diff_truncated ? el("p", { class: "muted small", id: "compare-truncated" }, "The diff was cut at its size limit; the list of files above is whole.") : null,
  ].flat().filter(x => x !== null && x !== undefined);
}

// udiff draws unified diff text line by line: added lines green, removed
// lines red, hunk and file headers set apart. Each line is its own block,
// so long lines wrap instead of widening the page.
function udiff(text) {
  const lines = text.replace(/\n$/, "").split("\n");
  const kind = l => l.startsWith("diff ") || l.startsWith("index ") || l.startsWith("+++ ") || l.startsWith("--- ") || l.startsWith("new file") || l.startsWith("deleted file") || l.startsWith("Binary files") ? "file"
    : l.startsWith("@@") ? "hunk" : l.startsWith("+") ? "add" : l.startsWith("-") ? "del" : l.startsWith("\\") ? "note" : "ctx";
  return el("div", { class: "udiff", id: "compare-diff", role: "region", "aria-label": "Diff from A's workspace to B's", tabindex: "0" },
    lines.map(l => el("div", { class: "ud-" + kind(l) }, l || " ")));
}
