// The session page's trace: where the time and the money went, seen at a
// glance. A waterfall draws each step as a row on one time axis shared by
// every row — the model call, each tool call, and the time spent waiting
// (for an approval, a person's reply or a resume) — and two small bar
// charts give each step's tokens and cost. Every bar's <title> holds the
// exact numbers. Everything is read from the session's state
// (GET /v1/sessions/{id}); nothing here keeps a copy of it.
//
// Time marks, from the state's iterations:
//   - a step starts at started_at and ends at ended_at (an unfinished step
//     at its latest recorded mark);
//   - the model call runs from the step's start (or the previous reply)
//     to the assistant message's timestamp;
//   - a tool call runs from its timestamp (when it started) for its
//     duration;
//   - a gap before a tool call starts, and a gap between two steps, is
//     waiting: an approval, a person's reply, a pause, or bookkeeping.
//     Gaps shorter than waitFloorMs are bookkeeping and are not drawn.
"use strict";

const traceSVG = "http://www.w3.org/2000/svg";
const waitFloorMs = 20;
// Charts draw at most this many bars; longer sessions are bucketed into
// runs of consecutive steps, each bar the sum of its steps.
const traceMaxBars = 120;

function svgEl(tag, attrs = {}, ...kids) {
  const e = document.createElementNS(traceSVG, tag);
  for (const [k, v] of Object.entries(attrs)) if (v !== undefined && v !== null) e.setAttribute(k, String(v));
  for (const k of kids) if (k) e.append(k instanceof Node ? k : document.createTextNode(String(k)));
  return e;
}

function traceTitle(text) { return svgEl("title", {}, text); }

// traceMs shows a span with a second decimal under 10 s (fmtSpan, app.js).
function traceMs(ms) { return fmtSpan(ms, ms < 10000 ? 2 : 1); }

function traceNum(n) { return Number(n || 0).toLocaleString("en-US"); }

// traceSpans turns one step into spans {kind, from, to, label, error}
// with times in ms since the epoch, and the step's own [start, end].
function traceSpans(it, prevEnd) {
  const t = s => (s ? Date.parse(s) : NaN);
  const start = t(it.started_at);
  const spans = [];
  if (isNaN(start)) return { start: NaN, end: NaN, spans };
  if (!isNaN(prevEnd) && start - prevEnd >= waitFloorMs) {
    spans.push({ kind: "wait", from: prevEnd, to: start, label: "waiting before this step (a reply, a pause or a resume)" });
  }
  let cursor = start, last = start;
  const marks = [];
  for (const m of it.messages || []) {
    if (m.role === "assistant" && !m.kind) marks.push({ at: t(m.timestamp), reply: true });
  }
  for (const c of it.tool_calls || []) {
    const at = t(c.timestamp);
    if (!isNaN(at)) marks.push({ at, call: c });
  }
  // Replies before the calls they made (a call's start is never earlier
  // than its reply; on a tie the reply comes first).
  marks.sort((a, b) => a.at - b.at || (a.reply ? -1 : 1));
  for (const m of marks) {
    if (isNaN(m.at)) continue;
    if (m.reply) {
      spans.push({ kind: "model", from: cursor, to: Math.max(cursor, m.at), label: "model call" });
      cursor = Math.max(cursor, m.at);
      last = Math.max(last, cursor);
      continue;
    }
    const c = m.call;
    if (c.status === "pending") { last = Math.max(last, m.at); continue; } // asked for, not started
    if (m.at - cursor >= waitFloorMs) spans.push({ kind: "wait", from: cursor, to: m.at, label: "waiting before " + c.tool_name + " ran (approval, a pause, or queued)" });
    const end = m.at + durSecs(c.duration) * 1000; // "1.5s" (or an older server's nanoseconds) as ms
    spans.push({ kind: "tool", from: m.at, to: end, label: c.tool_name, error: c.status === "error" });
    cursor = Math.max(cursor, end);
    last = Math.max(last, end);
  }
  let end = t(it.ended_at);
  if (isNaN(end)) {
    for (const m of it.messages || []) if (!isNaN(t(m.timestamp))) last = Math.max(last, t(m.timestamp));
    end = last;
  }
  return { start, end: Math.max(end, last), spans };
}

// traceBuckets groups per-step values into at most traceMaxBars bars.
function traceBuckets(iters) {
  const size = Math.max(1, Math.ceil(iters.length / traceMaxBars));
  const out = [];
  for (let i = 0; i < iters.length; i += size) {
    const group = iters.slice(i, i + size);
    const sum = f => group.reduce((a, it) => a + f(it), 0);
    out.push({ first: group[0].number, last: group[group.length - 1].number,
      input: sum(it => (it.usage || {}).input_tokens || 0), output: sum(it => (it.usage || {}).output_tokens || 0),
      cost: sum(it => it.cost_usd || 0) });
  }
  return { size, bars: out };
}

function traceChart(id, label, bars, parts, total, describe) {
  const max = Math.max(0, ...bars.map(total));
  // Columns are at most a tenth of the chart wide: a short session's few
  // bars read as bars, not as blocks.
  const w = 100 / Math.max(10, bars.length);
  const svg = svgEl("svg", { class: "tr-chart", id, role: "img", "aria-label": label, width: "100%", height: "64" });
  bars.forEach((b, i) => {
    const g = svgEl("g", { class: "tr-col", "data-step": String(b.first) }, traceTitle(describe(b)));
    let y = 60;
    for (const [cls, v] of parts) {
      const h = max ? 56 * v(b) / max : 0;
      if (h <= 0) continue;
      y -= h;
      g.append(svgEl("rect", { class: cls, x: (i * w + w * 0.1).toFixed(3) + "%", width: (w * 0.8).toFixed(3) + "%", y: y.toFixed(2), height: h.toFixed(2) }));
    }
    // A hover target over the whole column, so a small bar is easy to hit.
    g.append(svgEl("rect", { class: "tr-hit", x: (i * w).toFixed(3) + "%", width: w.toFixed(3) + "%", y: "0", height: "60" }));
    svg.append(g);
  });
  svg.append(svgEl("line", { class: "tr-base", x1: "0", x2: "100%", y1: "60.5", y2: "60.5" }));
  return svg;
}

let traceCache = { key: "", onSelect: null, node: null };

// traceCard renders the trace of a session's state as a card, or null
// before the first step. The same node comes back while the state's
// sequence number is unchanged, so a page that re-renders on every event
// redraws the trace only when the log has grown.
function traceCard(s, onSelect) {
  const iters = (s.iterations || []).filter(it => it.started_at);
  if (!iters.length) return null;
  const key = s.id + "@" + s.seq + "/" + iters.length;
  if (traceCache.key === key && traceCache.onSelect === onSelect) return traceCache.node;

  let prevEnd = NaN;
  const rows = iters.map(it => {
    const r = traceSpans(it, prevEnd);
    if (!isNaN(r.end)) prevEnd = r.end;
    return Object.assign(r, { it });
  });
  const t0 = Math.min(...rows.map(r => (r.spans.length ? Math.min(r.start, ...r.spans.map(x => x.from)) : r.start)).filter(x => !isNaN(x)));
  const t1 = Math.max(...rows.map(r => r.end).filter(x => !isNaN(x)));
  const span = Math.max(1, t1 - t0);
  const pct = ms => Math.max(0, Math.min(100, 100 * ms / span));

  // The axis: ticks at round times (1, 2 or 5 times a power of ten), at
  // most five of them past zero.
  const axis = svgEl("svg", { class: "tr-axis", width: "100%", height: "16", "aria-hidden": "true" });
  const mag = Math.pow(10, Math.floor(Math.log10(span / 5)));
  const tick = [1, 2, 5, 10].map(f => f * mag).find(step => span / step <= 5);
  for (let ms = 0; ms <= span; ms += tick) {
    const x = pct(ms), anchor = x < 3 ? "start" : x > 94 ? "end" : "middle";
    axis.append(svgEl("line", { x1: x.toFixed(3) + "%", x2: x.toFixed(3) + "%", y1: "12", y2: "16" }),
      svgEl("text", { x: x.toFixed(3) + "%", y: "10", "text-anchor": anchor }, traceMs(ms)));
  }

  const body = rows.map(r => {
    const it = r.it, u = it.usage || {};
    const bars = svgEl("svg", { class: "tr-bars", width: "100%", height: "14", role: "img", "aria-label": `Step ${it.number} on the time axis` });
    if (!isNaN(r.start)) {
      // The step's whole extent, faint, under its parts.
      bars.append(svgEl("rect", { class: "tr-step", x: pct(r.start - t0).toFixed(3) + "%", width: Math.max(0.15, pct(r.end - r.start)).toFixed(3) + "%", y: "1", height: "12" },
        traceTitle(`Step ${it.number}${it.rewound ? " (set aside by a rewind)" : ""}: ${traceMs(r.end - r.start)}${it.status === "in_progress" ? " so far" : ""}`)));
    }
    for (const x of r.spans) {
      const ms = x.to - x.from;
      bars.append(svgEl("rect", { class: "tr-" + x.kind + (x.error ? " tr-err" : ""), "data-kind": x.kind, "data-ms": String(Math.round(ms)),
        x: pct(x.from - t0).toFixed(3) + "%", width: Math.max(0.15, pct(ms)).toFixed(3) + "%", y: x.kind === "wait" ? "4" : "2", height: x.kind === "wait" ? "6" : "10" },
        traceTitle(`Step ${it.number} · ${x.label}${x.error ? " (error)" : ""}: ${traceMs(ms)}`)));
    }
    const total = (u.input_tokens || 0) + (u.output_tokens || 0);
    return traceRow(it, bars, isNaN(r.end) ? "" : traceMs(r.end - r.start), `${traceNum(total)} tok`, onSelect);
  });

  const { size, bars } = traceBuckets(iters);
  const stepName = b => (b.first === b.last ? `Step ${b.first}` : `Steps ${b.first}–${b.last}`);
  const tokens = traceChart("trace-tokens", "Tokens per step", bars,
    [["tr-in", b => b.input], ["tr-out", b => b.output]], b => b.input + b.output,
    b => `${stepName(b)}: ${traceNum(b.input + b.output)} tokens (${traceNum(b.input)} in + ${traceNum(b.output)} out)`);
  const anyCost = bars.some(b => b.cost > 0);
  const cost = traceChart("trace-cost", "Cost per step", bars, [["tr-usd", b => b.cost]], b => b.cost,
    b => `${stepName(b)}: $${b.cost.toFixed(6)}`);
  const maxTok = Math.max(...bars.map(b => b.input + b.output)), maxCost = Math.max(...bars.map(b => b.cost));

  const card = document.createElement("div");
  card.className = "card trace";
  card.id = "trace";
  const h = document.createElement("h2");
  h.textContent = `Trace · ${iters.length} step${iters.length === 1 ? "" : "s"} in ${traceMs(span)}`;
  const legend = document.createElement("p");
  legend.className = "tr-legend small muted";
  for (const [cls, text] of [["tr-model", "model"], ["tr-tool", "tool"], ["tr-tool tr-err", "tool error"], ["tr-wait", "waiting"], ["tr-in", "input tokens"], ["tr-out", "output tokens"], ["tr-usd", "cost"]]) {
    const sw = svgEl("svg", { width: "10", height: "10", "aria-hidden": "true" }, svgEl("rect", { class: cls, width: "10", height: "10" }));
    const item = document.createElement("span");
    item.append(sw, " " + text);
    legend.append(item);
  }
  const head = traceRow(null, axis, "", "", null);
  const rowsBox = document.createElement("div");
  rowsBox.className = "tr-rows";
  rowsBox.id = "trace-rows";
  rowsBox.append(...body);
  const charts = document.createElement("div");
  charts.className = "tr-charts";
  const caption = (text, node) => { const f = document.createElement("figure"); const c = document.createElement("figcaption"); c.className = "small muted"; c.textContent = text; f.append(c, node); return f; };
  const per = size > 1 ? ` (bars of ${size} steps)` : "";
  charts.append(caption(`Tokens per step${per} · highest ${traceNum(maxTok)}`, tokens),
    caption(anyCost ? `Cost per step${per} · highest $${maxCost.toFixed(4)} · total $${(s.cost_usd || 0).toFixed(4)}` : "Cost per step: no price known for this model", cost));
  card.append(h, legend, head, rowsBox, charts);
  traceCache = { key, onSelect, node: card };
  return card;
}

function traceRow(it, bars, dur, tok, onSelect) {
  const row = document.createElement("div");
  // A step a rewind set aside still took its time and tokens: it is drawn
  // where it ran, faded and named as set aside.
  row.className = "tr-row" + (it ? "" : " tr-head") + (it && it.rewound ? " tr-rewound" : "");
  const label = document.createElement(it && onSelect ? "button" : "span");
  label.className = "tr-label" + (it && onSelect ? " link" : "");
  if (it) {
    row.dataset.step = String(it.number);
    label.textContent = `Step ${it.number}` + (it.rewound ? " · rewound" : "");
    if (onSelect) { label.type = "button"; label.setAttribute("aria-label", `Details of step ${it.number}` + (it.rewound ? " (rewound)" : "")); label.addEventListener("click", () => onSelect(it)); }
  }
  const d = document.createElement("span");
  d.className = "tr-num";
  d.textContent = dur;
  const k = document.createElement("span");
  k.className = "tr-num muted";
  k.textContent = tok;
  row.append(label, bars, d, k);
  return row;
}
