// agentloop dashboard: reads only the /v1 API and its event streams.
"use strict";

const $ = (sel, root = document) => root.querySelector(sel);
const main = () => $("#main");
let current = null; // the view on screen: {stop()}

// ---- API ----------------------------------------------------------------

function headers(extra = {}) {
  const h = Object.assign({}, extra);
  const key = localStorage.getItem("agentloop.key");
  if (key) h["Authorization"] = "Bearer " + key;
  return h;
}

async function api(method, path, body) {
  const init = { method, headers: headers(body ? { "Content-Type": "application/json" } : {}) };
  if (body !== undefined) init.body = JSON.stringify(body);
  const resp = await fetch(path, init);
  if (resp.status === 204) return null;
  const text = await resp.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch (e) { data = { detail: text }; }
  if (!resp.ok) throw new Error((data && data.detail) || ("HTTP " + resp.status));
  return data;
}

// stream follows a Server-Sent Events endpoint with fetch (so the API key
// can go in a header), resuming from the last id after a dropped
// connection, until signal aborts it.
async function stream(path, lastId, onEvent, signal) {
  for (let attempt = 0; !signal.aborted; attempt++) {
    try {
      const h = headers({ Accept: "text/event-stream" });
      if (lastId) h["Last-Event-ID"] = String(lastId);
      const resp = await fetch(path, { headers: h, signal });
      // A server starting or stopping answers 5xx for a moment: retry.
      if (resp.status >= 500) throw new Error("HTTP " + resp.status);
      if (!resp.ok) { onEvent("error", { detail: "HTTP " + resp.status }); return; }
      connected(true);
      const reader = resp.body.getReader();
      const dec = new TextDecoder();
      let buf = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buf += dec.decode(value, { stream: true });
        let i;
        while ((i = buf.indexOf("\n\n")) >= 0) {
          const block = buf.slice(0, i); buf = buf.slice(i + 2);
          let type = "message", data = "", id = null;
          for (const line of block.split("\n")) {
            if (line.startsWith("event: ")) type = line.slice(7);
            else if (line.startsWith("data: ")) data += line.slice(6);
            else if (line.startsWith("id: ")) id = line.slice(4);
          }
          if (!data) continue;
          if (id) lastId = id;
          let parsed; try { parsed = JSON.parse(data); } catch (e) { continue; }
          if (onEvent(type, parsed, id) === false) return;
        }
      }
      attempt = 0;
    } catch (e) {
      if (signal.aborted) return;
      connected(false); // a stream that ended cleanly is just reopened
    }
    await new Promise(r => setTimeout(r, Math.min(5000, 300 * (attempt + 1))));
  }
}

// connected shows, in the top bar, whether the live streams reach the
// server; while they do not, the page retries and says so.
function connected(ok) {
  const c = $("#conn");
  if (!c) return;
  c.hidden = ok;
  c.textContent = ok ? "" : "Connection to the server lost — reconnecting…";
}

// ---- helpers ------------------------------------------------------------

function el(tag, attrs = {}, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") e.className = v;
    else if (k === "width") e.style.width = v; // CSSOM: allowed by the page's CSP, a style attribute is not
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v === true ? "" : v);
  }
  for (const k of kids.flat()) if (k !== null && k !== undefined && k !== false) e.append(k instanceof Node ? k : String(k));
  return e;
}

function badge(status) {
  return el("span", { class: "badge s-" + status, "data-status": status }, status);
}

function toast(text) {
  const t = el("div", { class: "toast" }, text);
  $("#toasts").append(t);
  setTimeout(() => t.remove(), 6000);
}

// sessionDuration is how long a session has run: until its last update
// once it stopped, until now while it runs.
function sessionDuration(sum) {
  const from = Date.parse(sum.created_at), to = sum.status === "running" ? Date.now() : Date.parse(sum.updated_at);
  if (!from || !to || to < from) return "";
  const sec = Math.round((to - from) / 1000);
  return sec < 60 ? sec + " s" : sec < 3600 ? Math.floor(sec / 60) + " min " + (sec % 60) + " s" : Math.floor(sec / 3600) + " h " + Math.floor(sec % 3600 / 60) + " min";
}
// endedStatuses are the statuses of a session that has ended.
const endedStatuses = ["completed", "failed", "terminated", "error"];
function fmtTime(s) { return s ? new Date(s).toLocaleString() : ""; }
function fmtCost(c) { return c ? "$" + c.toFixed(4) : "—"; }
// durSecs reads a duration from the API as seconds. The API writes a string
// of seconds with an "s" suffix ("1.5s", "0.000352s"), which parseFloat
// reads; a number is the nanoseconds an older server wrote.
function durSecs(d) {
  const s = typeof d === "number" ? d / 1e9 : parseFloat(d);
  return Number.isFinite(s) ? s : 0;
}
// fmtSpan shows a span of ms as "350 ms", "1.5 s" (with digits decimals)
// or "2 min 5 s": the one form the session, trace and compare pages use.
// It rounds first and picks the form after, so 999.7 ms is "1.0 s" and
// 119.6 s is "2 min 0 s", never "1000 ms" or "1 min 60 s".
function fmtSpan(ms, digits = 1) {
  if (Math.round(ms) < 1000) return Math.round(ms) + " ms";
  const secs = (ms / 1000).toFixed(digits);
  if (Number(secs) < 60) return secs + " s";
  const whole = Math.round(ms / 1000);
  return Math.floor(whole / 60) + " min " + whole % 60 + " s";
}
// fmtDur shows an API duration, or "" when it is zero or missing.
function fmtDur(d) { const ms = durSecs(d) * 1000; return ms ? fmtSpan(ms) : ""; }
function shortModel(m) { m = m || ""; return m.startsWith("script:") && m.includes("/") ? "script:…/" + m.split("/").pop() : m; }
function cut(s, n) { s = s || ""; return s.length > n ? s.slice(0, n) + "…" : s; }

// ---- sessions list --------------------------------------------------------

function listView() {
  const ctl = new AbortController();
  const params = new URLSearchParams(location.hash.split("?")[1] || "");
  const status = params.get("status") || "", label = params.get("label") || "", workspace = params.get("workspace") || "";
  const go = (k, v) => { const p = new URLSearchParams(location.hash.split("?")[1] || ""); if (v) p.set(k, v); else p.delete(k); location.hash = "#/" + (p.toString() ? "?" + p : ""); };
  const rows = new Map();
  const tbody = el("tbody", { id: "sessions" });
  const filter = el("div", { class: "row" },
    el("select", { id: "filter-status", "aria-label": "Filter by status", onchange: e => go("status", e.target.value) },
      ["", "running", "paused", "waiting", "completed", "failed", "terminated", "error"].map(s => el("option", { value: s, selected: s === status }, s || "all statuses"))),
    el("input", { id: "filter-label", "aria-label": "Filter by label (key=value)", placeholder: "label key=value", value: label, onchange: e => go("label", e.target.value.trim()) }),
    el("input", { id: "filter-workspace", "aria-label": "Filter by workspace", placeholder: "workspace", value: workspace, onchange: e => go("workspace", e.target.value.trim()) }));
  const filtered = !!(label || workspace);
  const form = el("form", { class: "new card", id: "new-session", onsubmit: startSession },
    el("h2", {}, "Start a session"),
    el("label", { for: "new-task" }, "Task"),
    el("textarea", { id: "new-task", placeholder: "What should the agent do?" }),
    el("div", { class: "row" },
      el("label", {}, "Model", el("input", { id: "new-model", placeholder: "server default" })),
      el("label", {}, "Mode", el("select", { id: "new-mode" }, ["tools", "thinking", "flash", "self-reasoning"].map(m => el("option", { value: m }, m)))),
      el("label", {}, "Workspace", el("input", { id: "new-workspace", placeholder: "a new directory" })),
      el("label", {}, "Max steps", el("input", { id: "new-max", type: "number", min: "1", max: "200", placeholder: "15" })),
      el("label", {}, "Approval", el("select", { id: "new-approval" }, el("option", { value: "" }, "server default"), el("option", { value: "auto" }, "run tools without asking"), el("option", { value: "ask" }, "ask before changes")))),
    el("details", { id: "new-more" }, el("summary", {}, "More: profile, limits, a conversation to start from"),
      el("div", { class: "row" },
        el("label", {}, "Profile", el("input", { id: "new-profile", placeholder: "server default" })),
        el("label", {}, "Timeout", el("input", { id: "new-timeout", placeholder: "30m" })),
        el("label", {}, "Token budget", el("input", { id: "new-budget-tokens", type: "number", min: "0" })),
        el("label", {}, "Cost budget ($)", el("input", { id: "new-budget-usd", type: "number", min: "0", step: "0.01" })),
        el("label", {}, "Labels (k=v, …)", el("input", { id: "new-labels", placeholder: "team=red" }))),
      el("label", { for: "new-messages" }, "Conversation (JSON array of {role, content}; replaces the task)"),
      el("textarea", { id: "new-messages", placeholder: '[{"role":"user","content":"…"}]' })),
    el("div", { class: "row" }, el("button", { class: "primary", id: "new-start", type: "submit" }, "Start"), el("span", { id: "new-error", class: "error", role: "alert" })));
  main().replaceChildren(
    el("h1", {}, "Sessions"),
    el("div", { class: "row" }, filter),
    el("table", {}, el("thead", {}, el("tr", {}, ["Status", "Task", "Model", "Step", "Tokens", "Cost", "Started", "Duration"].map((h, i) => el("th", { class: i >= 5 ? "hide-narrow" : "" }, h)))), tbody),
    form, notificationsCard());

  function render(sum) {
    if (status && sum.status !== status) { const r = rows.get(sum.id); if (r) { r.remove(); rows.delete(sum.id); } return; }
    const tr = el("tr", { "data-id": sum.id },
      el("td", {}, badge(sum.status)),
      el("td", { class: "task" }, el("a", { href: "#/s/" + sum.id }, cut(sum.task, 120))),
      el("td", { class: "model", title: sum.model || "" }, shortModel(sum.model)),
      el("td", {}, sum.max_iterations ? `${sum.iteration} of ${sum.max_iterations}` : String(sum.iteration)),
      el("td", {}, String(sum.tokens)),
      el("td", { class: "hide-narrow" }, fmtCost(sum.cost_usd)),
      el("td", { class: "hide-narrow" }, fmtTime(sum.created_at)),
      el("td", { class: "hide-narrow", title: "updated " + fmtTime(sum.updated_at) }, sessionDuration(sum)));
    const old = rows.get(sum.id);
    if (old) old.replaceWith(tr); else tbody.prepend(tr);
    rows.set(sum.id, tr);
  }
  const q = new URLSearchParams({ limit: "100" });
  if (status) q.set("status", status);
  if (label) q.set("label", label);
  if (workspace) q.set("workspace", workspace);
  api("GET", "/v1/sessions?" + q).then(page => {
    for (const s of page.sessions.slice().reverse()) render(s);
    if (!page.sessions.length) {
      const td = el("td", { colspan: 8, class: "muted" }, "No sessions yet: start one below.");
      tbody.append(el("tr", { id: "empty" }, td));
      if (!status && !filtered) offerDemo(td);
    }
  }).catch(e => tbody.append(el("tr", {}, el("td", { colspan: 8, class: "error" }, e.message))));
  // Live updates: a session already listed changes in place; new ones
  // appear unless a label or workspace filter is on (the stream does not
  // carry them).
  stream("/v1/events", null, (type, data) => {
    if (type === "summary") notifySummary(data); // notify.js
    if (type !== "summary" || (filtered && !rows.has(data.id))) return;
    const e = $("#empty"); if (e) e.remove();
    render(data);
  }, ctl.signal);
  return { stop: () => ctl.abort() };
}

// offerDemo adds a "Run the demo" button to the empty session list of a
// server started with --demo (GET /v1/demo says so); the button starts the
// demo session and opens it. data-demo on the cell says what the server
// answered: "offered" or "none".
async function offerDemo(td) {
  let on = false;
  try { on = (await api("GET", "/v1/demo")).enabled; } catch (e) { /* no offer */ }
  td.dataset.demo = on ? "offered" : "none";
  if (!on) return;
  const msg = el("span", { class: "error", role: "alert" });
  const btn = el("button", { class: "primary", id: "run-demo", type: "button" }, "Run the demo");
  btn.addEventListener("click", async () => {
    btn.disabled = true;
    try { location.hash = "#/s/" + (await api("POST", "/v1/demo")).id; }
    catch (e) { msg.textContent = e.message; btn.disabled = false; }
  });
  td.append(" ", btn, " ", el("span", {}, "a scripted model plans, writes a file and runs it, step by step."), " ", msg);
}

async function startSession(ev) {
  ev.preventDefault();
  const body = {};
  const v = id => $(id).value.trim();
  if (v("#new-messages")) {
    try { body.messages = JSON.parse(v("#new-messages")); }
    catch (e) { $("#new-error").textContent = "The conversation is not valid JSON: " + e.message; return; }
  } else body.task = v("#new-task");
  if (v("#new-profile")) body.profile = v("#new-profile");
  if (v("#new-timeout")) body.timeout = v("#new-timeout");
  if (v("#new-budget-tokens")) body.budget_tokens = Number(v("#new-budget-tokens"));
  if (v("#new-budget-usd")) body.budget_usd = Number(v("#new-budget-usd"));
  if (v("#new-labels")) {
    body.labels = {};
    for (const pair of v("#new-labels").split(",")) {
      const [k, ...rest] = pair.split("=");
      if (k.trim()) body.labels[k.trim()] = rest.join("=").trim();
    }
  }
  if (v("#new-model")) body.model = v("#new-model");
  if (v("#new-mode") !== "tools") body.mode = v("#new-mode");
  if (v("#new-workspace")) body.workspace = v("#new-workspace");
  if (v("#new-max")) body.max_iterations = Number(v("#new-max"));
  if (v("#new-approval")) body.approval = v("#new-approval");
  try {
    const c = await api("POST", "/v1/sessions", body);
    location.hash = "#/s/" + c.id;
  } catch (e) { $("#new-error").textContent = e.message; }
}

// ---- one session -----------------------------------------------------------

// stepKey names a step on the page and in the address: its number for
// the live step, N-r1, N-r2… for the steps of that number a rewind set
// aside, in the order they ran (a rewound session numbers its steps
// after the rewind again from there).
function stepKey(s, it) {
  if (!it.rewound) return String(it.number);
  const same = (s.iterations || []).filter(o => o.rewound && o.number === it.number);
  // By start time, not identity: it may come from an earlier read.
  return it.number + "-r" + (same.findIndex(o => o.started_at === it.started_at) + 1);
}

// stepByKey is the step a key names; a bare number is the live step of
// that number (the last one set aside when none is live).
function stepByKey(s, key) {
  if (!key) return null;
  const its = s.iterations || [];
  return its.find(it => stepKey(s, it) === key) || its.findLast(it => it.number === Number(key));
}

function sessionView(id) {
  const ctl = new AbortController();
  let state = null, refreshing = null, again = false, live = "";
  const announced = new Set();
  // The selected step's details panel, by its key (stepKey); kept in the
  // address so a reload shows the same step.
  let selected = new URLSearchParams(location.hash.split("?")[1] || "").get("step") || "";
  function select(key) {
    selected = key;
    history.replaceState(null, "", "#/s/" + id + (key ? "?step=" + key : ""));
    render();
    if (key && $("#iteration")) $("#iteration").focus();
  }
  // selectStep selects a step the trace names (made once: the trace is
  // kept while the function it was given is the same).
  const selectStep = it => select(stepKey(state, it));

  async function refresh() {
    if (refreshing) { again = true; return; }
    refreshing = (async () => {
      try { state = await api("GET", "/v1/sessions/" + id); render(); }
      catch (e) { if (!ctl.signal.aborted) main().replaceChildren(el("h1", {}, "Session " + id), el("p", { class: "error" }, e.message)); }
    })();
    await refreshing; refreshing = null;
    if (again) { again = false; refresh(); }
  }

  function control(kind, body) {
    return api("POST", "/v1/sessions/" + id + "/" + kind, body || {}).then(r => { toast(r.outcome || kind); refresh(); }).catch(e => toast(e.message));
  }

  let top = null; // the header and approval cards, and what they show
  function render() {
    // A read that ends after the person left this page (stop aborted
    // ctl) never draws the old session over the new page.
    if (ctl.signal.aborted) return;
    const s = state, running = s.status === "running", stopped = s.status === "paused" || s.status === "waiting";
    // The controls are rebuilt only when what they show changed: a button
    // a person is pressing is never swapped out under the pointer.
    const sig = JSON.stringify([s.status, s.reason, s.detail, s.question, s.current_iteration, s.max_iterations, s.model, s.current_model, s.pending_approvals]);
    if (!top || top.sig !== sig) top = { sig, nodes: controls(s, running, stopped) };
    const [header, ...approvals] = top.nodes;
    const side = el("div", {},
      iterationPanel(stepByKey(s, selected)),
      forkTreeCard(s, render), // forktree.js
      planCard(s.plan),
      allowedCard(s),
      condensedCard(s),
      el("div", { class: "card", id: "usage" }, el("h2", {}, "Usage"), el("dl", { class: "kv" },
        el("dt", {}, "Model calls"), el("dd", {}, String(s.interaction_count)),
        el("dt", {}, "Tool calls"), el("dd", {}, String(s.tool_call_count)),
        el("dt", {}, "Tokens"), el("dd", {}, `${s.usage.input_tokens || 0} in + ${s.usage.output_tokens || 0} out`),
        el("dt", {}, "Cost"), el("dd", {}, fmtCost(s.cost_usd)))),
      s.verification ? el("div", { class: "card", id: "verification" }, el("h2", {}, "Verification: " + s.verification.outcome),
        el("ul", {}, s.verification.checks.map(c => el("li", {}, (c.passed ? "✓ " : "✗ ") + c.name))),
        followUpPart(s)) : null,
      s.memory && Object.keys(s.memory).length ? el("div", { class: "card", id: "memory" }, el("h2", {}, "Memory"),
        el("dl", { class: "kv" }, Object.entries(s.memory).map(([k, v]) => [el("dt", {}, k), el("dd", {}, cut(JSON.stringify(v), 200))]))) : null);
    const answer = s.answer ? el("div", { class: "card", id: "answer" }, el("h2", {}, s.partial ? "Partial answer" : "Answer"), el("div", { class: "answer" }, s.answer)) : null;
    const changes = (s.modified || []).length ? el("div", { class: "card", id: "changes" },
      el("h2", {}, "Files changed"),
      el("ul", {}, [...new Set(s.modified.map(m => m.path))].map(p => el("li", {}, p))),
      el("details", { "data-key": "diff", ontoggle: e => { if (e.target.open) loadDiff(e.target); } }, el("summary", {}, "Diff"), el("pre", { class: "diff", id: "diff" }, "Loading…"))) : null;
    const iters = (s.iterations || []).slice().reverse().map((it, i) => iteration(it, i === 0 && running));
    const warnings = (s.warnings || []).length ? el("div", { class: "card", id: "warnings" }, el("h2", {}, "Warnings"), el("ul", {}, s.warnings.map(w => el("li", {}, `${w.code}: ${w.message}`)))) : null;
    // A re-render keeps what the person opened and what they were typing.
    const open = new Set([...main().querySelectorAll("details[open][data-key]")].map(d => d.dataset.key));
    const typing = $("#reply-text") ? $("#reply-text").value : "";
    const focused = document.activeElement && document.activeElement.id;
    main().replaceChildren(header, ...approvals, answer || "", changes || "", traceCard(s, selectStep) || "", el("div", { class: "grid" },
      el("section", { "aria-label": "timeline" }, el("h2", {}, "Timeline"), el("div", { id: "timeline" }, iters), warnings || ""), side));
    for (const d of main().querySelectorAll("details[data-key]")) if (open.has(d.dataset.key)) d.open = true;
    if ($("#reply-text")) $("#reply-text").value = typing;
    if (focused && document.getElementById(focused)) document.getElementById(focused).focus();
  }

  // What an ended session left, as a session of its own: a follow-up in
  // the same workspace (optionally with another model), and the links
  // between a session and its follow-ups.
  let followUps = null;
  function followUpPart(s) {
    const ended = endedStatuses.includes(s.status);
    if (!ended) return null;
    if (followUps === null) {
      followUps = [];
      api("GET", "/v1/sessions?label=" + encodeURIComponent("follow_up_of=" + id)).then(r => { followUps = r.sessions || []; render(); }).catch(() => {});
    }
    const list = followUps.length ? el("p", { id: "follow-ups" }, "Follow-ups: ", followUps.flatMap(f => [el("a", { href: "#/s/" + f.id }, f.id), " (" + f.status + ") "])) : null;
    if (s.verification.outcome === "pass") return list;
    return el("div", {}, list,
      el("form", { class: "row", id: "follow-up-form", onsubmit: e => { e.preventDefault(); followUp(); } },
        el("label", { for: "follow-up-model" }, "Model"),
        el("input", { id: "follow-up-model", placeholder: shortModel(s.model), size: "24" }),
        el("button", { id: "btn-follow-up", type: "submit" }, "Start a follow-up")),
      el("p", { class: "muted" }, "A new session in the same workspace finishes what is left: the failing checks and unfinished plan steps."));
  }
  function followUp() {
    const model = $("#follow-up-model").value.trim();
    api("POST", "/v1/sessions/" + id + "/follow-up", model ? { model } : {})
      .then(r => { toast("follow-up " + r.id + " started"); location.hash = "#/s/" + r.id; })
      .catch(e => toast(e.message));
  }

  function controls(s, running, stopped) {
    const ended = endedStatuses.includes(s.status);
    const pct = s.max_iterations ? Math.min(100, Math.round(100 * s.current_iteration / s.max_iterations)) : 0;
    const header = el("div", { class: "card" },
      el("h1", {}, s.task),
      el("div", { class: "row" }, el("span", { id: "status" }, badge(s.status)), s.reason ? el("span", { class: "muted", id: "reason" }, s.reason) : null,
        el("span", { id: "step-text" }, `Step ${s.current_iteration} of ${s.max_iterations}`), el("span", { class: "muted", title: s.model || "" }, shortModel(s.model)),
        s.current_model && s.current_model !== s.model ? el("span", { id: "now-on", title: "its model kept failing; the session moved to a fallback model" }, "→ now on " + shortModel(s.current_model)) : null),
      el("div", { class: "progress", role: "progressbar", "aria-valuemin": "0", "aria-valuemax": String(s.max_iterations), "aria-valuenow": String(s.current_iteration), "aria-label": "steps" }, el("div", { width: pct + "%" })),
      s.detail ? el("p", { class: "muted" }, s.detail) : null,
      (s.labels || {}).follow_up_of ? el("p", { id: "follow-up-of" }, "Follow-up of ", el("a", { href: "#/s/" + s.labels.follow_up_of }, s.labels.follow_up_of)) : null,
      s.question ? el("p", { id: "question" }, s.question) : null,
      el("div", { class: "row" },
        el("button", { id: "btn-pause", disabled: !running, onclick: () => control("pause", { reason: "paused from the dashboard" }) }, "Pause"),
        el("button", { id: "btn-resume", disabled: !(stopped && !(s.pending_approvals || []).length), onclick: () => control("resume") }, "Resume"),
        el("button", { id: "btn-terminate", class: "danger", disabled: ended, onclick: terminate }, "Terminate")),
      ended ? null : el("form", { class: "row", onsubmit: e => { e.preventDefault(); const t = $("#reply-text").value.trim(); if (t) control("reply", { text: t }).then(() => { $("#reply-text").value = ""; }); } },
        el("label", { for: "reply-text" }, s.status === "waiting" ? "Reply" : "Message to the agent"),
        el("input", { id: "reply-text", size: "40" }), el("button", { id: "btn-reply", type: "submit" }, "Send")));
    const approvals = (s.pending_approvals || []).map(p => el("div", { class: "card", id: "approval", "data-call": p.call_id },
      el("h2", {}, "Approval needed: " + p.name),
      el("label", { for: "approval-args" }, "Arguments"),
      el("textarea", { id: "approval-args" }, JSON.stringify(p.input, null, 2)),
      el("div", { class: "row" },
        el("button", { id: "btn-approve", class: "primary", onclick: () => decide(p, true) }, "Approve"),
        el("button", { id: "btn-approve-session", title: "this exact call runs without asking for the rest of the session; revocable", onclick: () => decide(p, true, true) }, "Allow for this session"),
        el("button", { id: "btn-deny", onclick: () => decide(p, false) }, "Deny"))));
    return [header, ...approvals];
  }

  function iteration(it, isCurrent) {
    const msgs = (it.messages || []).filter(m => m.role !== "tool" && (m.content || "").trim()).map(m =>
      el("div", { class: "msg " + m.role }, (m.kind ? `[${m.kind}] ` : "") + cut(m.content, 4000)));
    const tools = (it.tool_calls || []).map(c => el("details", { class: "tool" + (c.status === "error" ? " err" : ""), "data-key": "tool-" + c.id },
      el("summary", {}, `${c.tool_name} ${cut(JSON.stringify(c.input), 120)} — ${c.status}${fmtDur(c.duration) ? ", " + fmtDur(c.duration) : ""}`),
      el("pre", {}, cut(c.output, 20000))));
    const key = stepKey(state, it), chosen = key === selected;
    return el("div", { class: "iter" + (isCurrent ? " current" : "") + (chosen ? " selected" : "") + (it.rewound ? " rewound" : ""), "data-n": String(it.number) },
      el("h3", {}, `Step ${it.number} · ${it.status}${fmtDur(it.duration) ? " · " + fmtDur(it.duration) : ""} · ${(it.usage.input_tokens || 0) + (it.usage.output_tokens || 0)} tokens `,
        // Another model did this step (a fallback, or the one a fork moved to): say which.
        it.model && state && it.model !== state.model ? el("span", { class: "switched", title: it.model }, (forkedOnto(state, it) ? "· forked onto " : "· fallback ") + shortModel(it.model) + " ") : null,
        el("button", { class: "link", "data-details": key, "aria-label": `Details of step ${it.number}${it.rewound ? " (rewound)" : ""}`, "aria-pressed": String(chosen), onclick: () => select(chosen ? "" : key) }, chosen ? "Hide details" : "Details"),
        forkStepActions(state, it)), // fork.js
      it.error ? el("p", { class: "error" }, it.error) : null, msgs, tools,
      isCurrent && live ? el("div", { class: "live", id: "live" }, live) : null);
  }

  // argList shows each argument on its own, strings as written (a file's
  // content reads as the file, not as an escaped JSON string).
  function argList(input) {
    if (!input || typeof input !== "object" || Array.isArray(input)) return el("pre", { "aria-label": "arguments" }, JSON.stringify(input, null, 2));
    return el("dl", { class: "args", "aria-label": "arguments" }, Object.entries(input).map(([k, v]) =>
      [el("dt", {}, k), el("dd", {}, el("pre", {}, typeof v === "string" ? v : JSON.stringify(v, null, 2)))]).flat());
  }

  // iterationPanel is everything recorded about one step: each message
  // (tool results and nudges too), each tool call in full, usage, errors.
  function iterationPanel(it) {
    if (!it) return null;
    const u = it.usage || {};
    const calls = (it.tool_calls || []).map(c => el("div", { class: "tool-detail" + (c.status === "error" ? " err" : "") },
      el("h4", {}, `${c.tool_name} — ${c.status}${fmtDur(c.duration) ? ", " + fmtDur(c.duration) : ""}`),
      argList(c.input),
      c.error ? el("p", { class: "error" }, c.error) : null,
      el("div", { class: "muted small" }, "result"), el("pre", { "aria-label": "output" }, c.output || "(no output)"),
      (c.modified || []).length ? el("p", { class: "muted" }, "Changed: " + c.modified.map(m => m.path).join(", ")) : null));
    const msgs = (it.messages || []).map(m => el("div", { class: "msg " + m.role },
      el("span", { class: "muted" }, `${m.role}${m.kind ? " · " + m.kind : ""}${m.tool_call_id ? " · " + m.tool_call_id : ""}: `), m.content || "(empty)"));
    const which = `step ${it.number}` + (it.rewound ? " (rewound)" : "");
    return el("div", { class: "card", id: "iteration", tabindex: "-1", "aria-label": "Details of " + which },
      el("div", { class: "row" }, el("h2", {}, `Step ${it.number}` + (it.rewound ? " (rewound)" : "")), el("button", { class: "link", id: "btn-iteration-close", onclick: () => select("") }, "Close")),
      el("dl", { class: "kv" },
        el("dt", {}, "Status"), el("dd", {}, it.status),
        el("dt", {}, "Started"), el("dd", {}, fmtTime(it.started_at)),
        el("dt", {}, "Duration"), el("dd", {}, fmtDur(it.duration) || "—"),
        el("dt", {}, "Tokens"), el("dd", {}, `${u.input_tokens || 0} in + ${u.output_tokens || 0} out` + (u.cache_read_tokens ? ` (${u.cache_read_tokens} cached)` : "")),
        el("dt", {}, "Cost"), el("dd", {}, fmtCost(it.cost_usd || 0))),
      it.error ? el("p", { class: "error" }, it.error) : null,
      el("h3", {}, "Messages"), msgs.length ? msgs : el("p", { class: "muted" }, "None yet."),
      el("h3", {}, `Tool calls (${calls.length})`), calls);
  }

  function loadDiff(details) {
    api("GET", "/v1/sessions/" + id + "/diff").then(d => {
      const pre = details.querySelector("pre");
      pre.textContent = d.diff || d.note || "No textual changes.";
    }).catch(e => { details.querySelector("pre").textContent = e.message; });
  }

  function planCard(p) {
    if (!p) return null;
    const steps = p.steps || [];
    const done = steps.filter(x => ["completed", "skipped", "failed"].includes(x.status)).length;
    return el("div", { class: "card plan", id: "plan" },
      el("h2", {}, "Plan"), el("p", {}, p.goal),
      el("div", { class: "progress", role: "progressbar", "aria-label": "plan", "aria-valuenow": String(done), "aria-valuemax": String(steps.length) }, el("div", { width: (steps.length ? Math.round(100 * done / steps.length) : 0) + "%" })),
      el("p", { class: "muted", id: "plan-pct" }, `${steps.length ? Math.round(100 * done / steps.length) : 0}% · `,
        el("span", { id: "plan-status" }, (p.status || "executing").replaceAll("_", " ")), p.current_step ? ` · step ${p.current_step} of ${steps.length}` : ""),
      el("ol", {}, steps.map((x, i) => el("li", { class: "st-" + (x.status || "pending") + (i + 1 === p.current_step ? " current" : ""),
        title: x.completed_at ? "completed " + new Date(x.completed_at).toLocaleString() : (x.status || "pending") },
        x.title + (x.result ? " — " + x.result : "")))));
  }

  function terminate() {
    const d = $("#terminate");
    d.returnValue = "";
    d.onclose = () => {
      if (d.returnValue !== "ok") return;
      const reason = new FormData(d.querySelector("form")).get("reason");
      control("terminate", { reason });
    };
    d.showModal();
  }

  function decide(p, approve, forSession) {
    const body = { approve, args_hash: p.args_hash };
    if (forSession) body.for_session = true;
    if (approve) {
      const edited = $("#approval-args").value;
      try { if (JSON.stringify(JSON.parse(edited)) !== JSON.stringify(p.input)) body.arguments = JSON.parse(edited); }
      catch (e) { toast("The arguments are not valid JSON"); return; }
    }
    api("POST", `/v1/sessions/${id}/approvals/${encodeURIComponent(p.call_id)}`, body).then(r => { toast(forSession ? "Allowed for this session" : approve ? "Approved" : "Denied"); refresh(); }).catch(e => toast(e.message));
  }

  // Where and how the conversation was condensed to fit the model's
  // context window: a model's summary, or the digest written without one.
  function condensedCard(s) {
    const cs = s.condensations || [];
    if (!cs.length) return null;
    return el("div", { class: "card", id: "condensed" }, el("h2", {}, "Condensed"),
      el("ul", {}, cs.map(c => el("li", {}, `before step ${c.iteration}: ${c.tokens_before} → ${c.tokens_after} tokens`
        + (c.stubbed ? " · old tool output cut" : "")
        + (c.dropped ? ` · ${c.dropped} messages replaced by ${c.by === "model" ? "a summary written by " + shortModel(c.model || s.model) : "a digest (no model call)"}` : "")
        + (c.usage && (c.usage.input_tokens || c.usage.output_tokens) ? ` · ${(c.usage.input_tokens || 0) + (c.usage.output_tokens || 0)} tokens` : "")
        + (c.cost_usd ? " · " + fmtCost(c.cost_usd) : "")
        + (c.summary_error ? ` · the summary failed (${c.summary_error}), so the digest was used` : "")))));
  }

  // The calls a person allowed for the rest of the session, each with a
  // way to make it ask again.
  function allowedCard(s) {
    const allowed = Object.entries(s.allowed || {});
    if (!allowed.length) return null;
    return el("div", { class: "card", id: "allowed" }, el("h2", {}, "Allowed for this session"),
      el("ul", {}, allowed.map(([hash, a]) => el("li", { "data-hash": hash }, `${a.name} ${cut(JSON.stringify(a.input), 120)} `,
        el("button", { class: "link", "data-revoke": hash, onclick: () => api("DELETE", `/v1/sessions/${id}/allowances/${encodeURIComponent(hash)}`)
          .then(r => { toast(r.outcome || "revoked"); refresh(); }).catch(e => toast(e.message)) }, "Revoke")))));
  }

  function announce(type, data) {
    const key = type + data.seq;
    if (announced.has(key)) return;
    announced.add(key);
    const d = data.data || {};
    if (type === "session.ended") toast(`Session ended: ${d.status} (${d.reason})`);
    if (type === "session.waiting") toast(d.reason === "approval" ? "Approval needed" : d.reason === "stuck" ? "The session seems stuck" : "The session waits for you");
    if (type === "session.paused") toast(`Paused: ${d.reason}`);
  }

  refresh().then(() => {
    if (!state) return;
    notifyState(state); // notify.js
    stream("/v1/sessions/" + id + "/events", state.seq, (type, data) => {
      if (type === "delta") { live += data.text || data.Text || ""; const l = $("#live"); if (l) l.textContent = live; return; }
      if (type === "tool_call") return;
      if (type === "model.responded") live = "";
      if (type.startsWith("session.")) { announce(type, data); notifyEvent(id, type, data); } // notify.js
      refresh();
    }, ctl.signal);
  });
  return { stop: () => ctl.abort() };
}

// ---- admin: prompts and keys -----------------------------------------------

function adminView() {
  const list = el("ul", { id: "prompts" });
  const name = el("input", { id: "prompt-name", placeholder: "name, e.g. coder", "aria-label": "Prompt name" });
  const text = el("textarea", { id: "prompt-text", "aria-label": "Prompt text", placeholder: "The system prompt" });
  const versions = el("div", { id: "prompt-versions", class: "muted" });
  const diff = el("pre", { id: "prompt-diff", class: "diff" });
  const msg = el("p", { id: "admin-msg", role: "alert" });
  async function load() {
    try {
      const d = await api("GET", "/v1/prompts");
      list.replaceChildren(...d.prompts.map(p => el("li", {}, el("a", { href: "#", onclick: e => { e.preventDefault(); open(p.name); } }, p.name), ` — version ${p.version}`)));
      if (!d.prompts.length) list.append(el("li", { class: "muted" }, "No prompts yet."));
    } catch (e) { msg.textContent = e.message; }
  }
  async function open(n, version) {
    const p = await api("GET", `/v1/prompts/${encodeURIComponent(n)}` + (version ? `?version=${version}` : ""));
    name.value = p.name; text.value = p.text;
    versions.replaceChildren(`Version ${p.version} of ${n}` + (p.author ? ` by ${p.author}` : "") + ". ",
      p.version > 1 ? el("button", { id: "btn-prompt-diff", type: "button", onclick: () => showDiff(n, p.version) }, `Compare with version ${p.version - 1}`) : "");
    diff.textContent = "";
  }
  async function showDiff(n, v) {
    const [a, b] = await Promise.all([api("GET", `/v1/prompts/${encodeURIComponent(n)}?version=${v - 1}`), api("GET", `/v1/prompts/${encodeURIComponent(n)}?version=${v}`)]);
    diff.textContent = lineDiff(a.text, b.text);
  }
  async function save(e) {
    e.preventDefault();
    try {
      const p = await api("PUT", `/v1/prompts/${encodeURIComponent(name.value.trim())}`, { text: text.value });
      msg.textContent = `Saved version ${p.version} of ${p.name}.`;
      load(); open(p.name);
    } catch (err) { msg.textContent = err.message; }
  }
  const keyRole = el("select", { id: "key-role", "aria-label": "Role" }, ["viewer", "operator", "admin"].map(r => el("option", { value: r }, r)));
  const keyName = el("input", { id: "key-name", placeholder: "what it is for", "aria-label": "Key name" });
  const keyTenant = el("input", { id: "key-tenant", placeholder: "tenant (local admin only)", "aria-label": "Tenant of the new key" });
  const keyOut = el("p", { id: "key-out", role: "status" });
  const keyList = el("table", { id: "keys" });
  async function loadKeys() {
    try {
      const d = await api("GET", "/v1/keys");
      keyList.replaceChildren(el("thead", {}, el("tr", {}, ...["Key", "Tenant", "Role", "Name", "Created", ""].map(h => el("th", { scope: "col" }, h)))),
        el("tbody", {}, ...d.keys.map(keyRow)));
      if (!d.keys.length) keyList.replaceChildren(el("caption", { class: "muted" }, "No keys yet."));
    } catch (e) { keyList.replaceChildren(el("caption", { class: "muted" }, e.message)); }
  }
  function keyRow(k) {
    const cell = el("td", {});
    const ask = () => cell.replaceChildren(`Revoke ${k.id}? `,
      el("button", { class: "danger", "data-confirm-revoke": k.id, type: "button", onclick: () => revoke(k.id) }, "Yes, revoke"), " ",
      el("button", { type: "button", onclick: () => cell.replaceChildren(revokeBtn) }, "Cancel"));
    const revokeBtn = el("button", { "data-revoke": k.id, type: "button", "aria-label": `Revoke key ${k.id}`, onclick: ask }, "Revoke");
    cell.append(revokeBtn);
    return el("tr", { "data-key-id": k.id }, el("td", {}, el("code", {}, k.id)), el("td", {}, k.tenant), el("td", {}, k.role), el("td", {}, k.name || ""),
      el("td", {}, new Date(k.created_at).toLocaleString()), cell);
  }
  async function revoke(id) {
    try {
      await api("DELETE", `/v1/keys/${encodeURIComponent(id)}`);
      keyOut.textContent = `Revoked ${id}: it no longer opens anything.`;
    } catch (err) { keyOut.textContent = err.message; }
    loadKeys();
  }
  async function makeKey(e) {
    e.preventDefault();
    try {
      const body = { role: keyRole.value, name: keyName.value.trim() };
      if (keyTenant.value.trim()) body.tenant = keyTenant.value.trim();
      const k = await api("POST", "/v1/keys", body);
      keyOut.replaceChildren("New key (shown once): ", el("code", { id: "new-key" }, k.key), ` — ${k.role} of ${k.tenant}`);
      loadKeys();
    } catch (err) { keyOut.textContent = err.message; }
  }
  main().replaceChildren(el("h1", {}, "Admin"),
    el("div", { class: "card" }, el("h2", {}, "Prompts"), list,
      el("form", { onsubmit: save }, el("div", { class: "row" }, name), text, el("div", { class: "row" }, el("button", { id: "btn-prompt-save", class: "primary", type: "submit" }, "Save a new version")), versions, diff, msg)),
    el("div", { class: "card" }, el("h2", {}, "API keys"), keyList,
      el("form", { class: "row", onsubmit: makeKey }, keyRole, keyName, keyTenant, el("button", { id: "btn-key", type: "submit" }, "Create key")), keyOut));
  loadKeys();
  load();
  return { stop() {} };
}

// lineDiff shows which lines two texts do not share (- old, + new).
function lineDiff(a, b) {
  const x = a.split("\n"), y = b.split("\n");
  const n = x.length, m = y.length, L = Array.from({ length: n + 1 }, () => new Array(m + 1).fill(0));
  for (let i = n - 1; i >= 0; i--) for (let j = m - 1; j >= 0; j--) L[i][j] = x[i] === y[j] ? L[i + 1][j + 1] + 1 : Math.max(L[i + 1][j], L[i][j + 1]);
  const out = [];
  let i = 0, j = 0;
  while (i < n && j < m) {
    if (x[i] === y[j]) { out.push("  " + x[i]); i++; j++; }
    else if (L[i + 1][j] >= L[i][j + 1]) out.push("- " + x[i++]);
    else out.push("+ " + y[j++]);
  }
  while (i < n) out.push("- " + x[i++]);
  while (j < m) out.push("+ " + y[j++]);
  return out.join("\n");
}

// ---- routing -------------------------------------------------------------

function route() {
  if (current) current.stop();
  const h = location.hash || "#/";
  const m = h.match(/^#\/s\/([A-Za-z0-9_-]+)/);
  const ev = h.match(/^#\/evals(?:\/([A-Za-z0-9_.-]+))?/);
  current = m ? sessionView(m[1]) : ev ? evalsView(ev[1]) : h.startsWith("#/admin") ? adminView() : h.startsWith("#/compare") ? compareView() /* compare.js */ : listView();
}

window.addEventListener("hashchange", route);
document.addEventListener("DOMContentLoaded", () => {
  const key = $("#apikey");
  key.value = localStorage.getItem("agentloop.key") || "";
  key.addEventListener("change", () => { localStorage.setItem("agentloop.key", key.value.trim()); route(); });
  route();
  showSandbox();
});

// showSandbox says in the top bar where sessions' commands run (from
// /readyz): the sandbox backend and the network policy.
async function showSandbox() {
  try {
    const r = await fetch("/readyz");
    const sb = (await r.json()).sandbox;
    const s = $("#sandbox");
    if (!sb || !s) return;
    s.textContent = sb.backend === "none" ? "commands run unsandboxed" : `sandbox: ${sb.backend}, network ${sb.network}`;
    s.classList.toggle("unsafe", sb.backend === "none");
    s.title = "Where the commands of sessions run (agentloop serve --sandbox, --network)";
    s.hidden = false;
  } catch (e) { /* the top bar goes without it */ }
}
