// The fork tree on the session page: the session's origin (forked_from,
// followed up a few levels) and, from the highest origin reached, the
// forks of each session (GET /v1/sessions?forked_from=ID) down to a few
// levels below this one. Each node links to its session and shows its
// status; each fork links to the compare view against the session it was
// forked from.
"use strict";

const forkTreeUp = 4;    // origins followed upward
const forkTreeDown = 3;  // levels of forks shown below this session
const forkTreeMax = 60;  // sessions drawn at most; the rest are counted
const forkTreeFresh = 5000; // ms a loaded tree is shown before it is read again

// forkTrees: per session page, the last tree read and its card.
const forkTrees = new Map();

// forkTreeCard returns the card for session s: its fork tree, and a note
// when its state lists no checkpoint (so nothing can be rewound or forked);
// null when there is neither. The tree is read again when the page is
// opened anew (changed, the page's render, is then another function),
// when s's status or origin changed, when it is older than forkTreeFresh
// at a render, and,
// while a session in it still runs, every forkTreeFresh while the card is
// on the page; changed is called when a read draws a different tree.
function forkTreeCard(s, changed) {
  let t = forkTrees.get(s.id);
  if (!t) { t = { key: "", at: 0, loading: false, sig: "", tree: null, timer: 0 }; forkTrees.set(s.id, t); }
  const key = s.status + "/" + JSON.stringify(s.forked_from || null);
  const load = () => {
    t.loading = true;
    forkTreeLoad(s).then(tree => {
      t.key = key; t.at = Date.now(); t.loading = false;
      const sig = JSON.stringify(tree);
      if (sig !== t.sig) { t.sig = sig; t.tree = tree; forkRedraw(s.id, t.view); }
      clearTimeout(t.timer);
      if (forkTreeLive(tree.top)) {
        t.timer = setTimeout(() => { if (forkOnScreen(s.id) && !t.loading) load(); }, forkTreeFresh);
      }
    }, e => { t.loading = false; t.key = key; t.at = Date.now(); t.tree = { error: e.message }; t.sig = ""; forkRedraw(s.id, t.view); });
  };
  if (t.view !== changed) { t.view = changed; t.key = ""; }
  if (!t.loading && (t.key !== key || Date.now() - t.at > forkTreeFresh)) load();
  const finished = (s.iterations || []).some(it => it.status !== "in_progress" && !it.rewound);
  const none = finished && !(s.checkpoints || []).length
    ? el("p", { class: "muted small", id: "fork-none" }, "This session has no workspace checkpoint — the server keeps none (agentloop serve --checkpoints off), or the session ran before it did — so it cannot be rewound or forked.")
    : null;
  const tree = t.tree && (t.tree.error ? el("p", { class: "error" }, t.tree.error)
    : t.tree.top.children.length || t.tree.top.id !== s.id ? forkTreeDraw(s, t.tree) : null);
  if (!tree && !none) return null;
  return el("div", { class: "card", id: "fork-tree" }, el("h2", {}, tree ? "Forks" : "Rewind and fork"), tree, none);
}

// forkTreeLive says whether a session in the tree may still change.
function forkTreeLive(n) {
  return n.status === "running" || n.children.some(forkTreeLive);
}

function forkTreeNode(x) {
  return { id: x.id, status: x.status, model: x.current_model || x.model, from: x.forked_from || null, children: [], more: 0 };
}

// forkTreeLoad reads the tree around s: {top, hidden, missing}.
async function forkTreeLoad(s) {
  let top = forkTreeNode(s), up = 0, missing = "";
  while (top.from && up < forkTreeUp) {
    let p;
    try { p = await api("GET", "/v1/sessions/" + encodeURIComponent(top.from.id)); }
    catch (e) { missing = `session ${top.from.id}, which ${top.id} was forked from, could not be read: ${e.message}`; break; }
    top = forkTreeNode(p);
    up++;
  }
  let drawn = 1, hidden = 0;
  const seen = new Set([top.id]);
  const deepest = up + forkTreeDown;
  async function expand(n, depth) {
    if (depth >= deepest) return;
    const r = await api("GET", "/v1/sessions?limit=100&forked_from=" + encodeURIComponent(n.id));
    // The list answers newest first; the tree reads oldest first.
    for (const sum of (r.sessions || []).slice().reverse()) {
      // Only a session that names n as its origin is its fork, and each
      // session is drawn once: a server that ignores the filter answers
      // with every session, and none of them is taken for a fork.
      if (!sum.forked_from || sum.forked_from.id !== n.id || seen.has(sum.id)) continue;
      seen.add(sum.id);
      if (drawn >= forkTreeMax) { n.more++; hidden++; continue; }
      drawn++;
      n.children.push(forkTreeNode(sum));
    }
    for (const c of n.children) await expand(c, depth + 1);
  }
  await expand(top, 0);
  return { top, hidden, missing };
}

function forkTreeDraw(s, tree) {
  const item = (n, parent) => el("li", { "data-session": n.id, class: n.id === s.id ? "ft-current" : "" },
    el("div", { class: "ft-node" },
      badge(n.status), " ",
      n.id === s.id ? el("strong", {}, n.id) : el("a", { href: "#/s/" + n.id }, n.id),
      n.id === s.id ? el("span", { class: "muted small" }, " (this session)") : null,
      parent ? el("div", { class: "ft-how small" },
        el("span", { class: "muted" }, `from step ${n.from.iteration}`),
        n.model !== parent.model ? el("span", { class: "muted", title: n.model || "" }, " · " + shortModel(n.model)) : null,
        " · ", el("a", { href: `#/compare?a=${encodeURIComponent(parent.id)}&b=${encodeURIComponent(n.id)}`, "data-compare": n.id }, "compare with original")) : null),
    n.children.length || n.more ? el("ul", {}, n.children.map(c => item(c, n)), n.more ? el("li", { class: "muted small" }, `…and ${n.more} more fork${n.more === 1 ? "" : "s"}`) : null) : null);
  return el("div", {},
    tree.missing ? el("p", { class: "error" }, tree.missing) : null,
    el("ul", { class: "ftree" }, item(tree.top, null)),
    tree.hidden ? el("p", { class: "muted small" }, `${tree.hidden} more not drawn.`) : null);
}
