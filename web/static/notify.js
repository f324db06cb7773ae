// Notifications on the dashboard: the Notifications card (the tenant's
// latest webhook deliveries: status, attempts, last error) and, for a
// person who opted in with the card's button, the browser's own
// notifications when a watched session starts waiting or ends. A session
// is watched while its page is open, or while the sessions list shows it.
// Nothing here changes a session; it only reads the API.
"use strict";

const notifyOptIn = "agentloop.notify"; // localStorage: "on" once the person opted in
const notifyLast = new Map(); // session → the status the list last showed
const notifyRecent = []; // what this page showed, newest first, for the card

// notificationsCard is the card on the sessions page; it refreshes itself
// while it is on the page.
function notificationsCard() {
  const status = el("span", { id: "notify-state", class: "muted" });
  const button = el("button", { id: "notify-optin", type: "button", onclick: optIn });
  const shown = el("ul", { id: "notify-shown" });
  const list = el("div", { id: "deliveries" }, el("p", { class: "muted" }, "Loading…"));
  const card = el("section", { class: "card", id: "notifications", "aria-label": "Notifications" },
    el("h2", {}, "Notifications"),
    el("div", { class: "row" }, button, status),
    shown,
    el("h3", {}, "Webhook deliveries"), list);

  function paint() {
    const api = "Notification" in window;
    const perm = api ? Notification.permission : "unsupported";
    const on = perm === "granted" && localStorage.getItem(notifyOptIn) === "on";
    button.textContent = on ? "Stop notifying me" : "Notify me in this browser";
    button.disabled = !api || perm === "denied";
    status.textContent = !api ? "This browser cannot show notifications."
      : perm === "denied" ? "Notifications are blocked in this browser's site settings."
      : on ? "On: a watched session that starts waiting or ends shows a notification."
      : "Off.";
    shown.replaceChildren(...notifyRecent.slice(0, 5).map(n => el("li", {}, el("a", { href: "#/s/" + n.id }, n.id), " ", n.title, n.body ? ": " + n.body : "")));
  }
  async function optIn() {
    if (localStorage.getItem(notifyOptIn) === "on" && Notification.permission === "granted") {
      localStorage.removeItem(notifyOptIn);
    } else if (await Notification.requestPermission() === "granted") {
      localStorage.setItem(notifyOptIn, "on");
    }
    paint();
  }
  async function load() {
    let resp;
    try { resp = await fetch("/v1/webhooks/deliveries?limit=10", { headers: headers() }); } catch (e) { return; }
    if (resp.status === 404) { list.replaceChildren(el("p", { class: "muted" }, "This server sends no webhooks (its store keeps none).")); return; }
    if (resp.status === 401 || resp.status === 403) { list.replaceChildren(el("p", { class: "muted" }, "Webhook deliveries are shown to admin and operator keys.")); return; }
    if (!resp.ok) { list.replaceChildren(el("p", { class: "error" }, "Deliveries: HTTP " + resp.status)); return; }
    const ds = (await resp.json()).deliveries;
    if (!ds.length) {
      list.replaceChildren(el("p", { class: "muted" }, "No deliveries yet. Add a webhook with POST /v1/webhooks {\"url\": …}, or start agentloop serve with --webhook."));
      return;
    }
    const cls = { delivered: "s-completed", pending: "s-waiting", failed: "s-failed" };
    list.replaceChildren(el("table", { id: "deliveries-table" },
      el("thead", {}, el("tr", {}, ["Status", "Event", "Session", "Attempts", "Last error", "Updated"].map(h => el("th", { scope: "col" }, h)))),
      el("tbody", {}, ds.map(d => el("tr", { "data-delivery": d.id },
        el("td", {}, el("span", { class: "badge " + (cls[d.status] || ""), "data-status": d.status }, d.status)),
        el("td", {}, d.kind),
        el("td", {}, el("a", { href: "#/s/" + d.session_id }, d.session_id)),
        el("td", { class: "num" }, String(d.attempts)),
        el("td", { class: d.last_error ? "error" : "muted" }, cut(d.last_error || "—", 120)),
        el("td", { title: d.url }, fmtTime(d.updated_at)))))));
  }
  const timer = setInterval(() => { if (!card.isConnected) clearInterval(timer); else load(); }, 5000);
  paint();
  load();
  notificationsCard.repaint = paint;
  return card;
}

// A session is watched from the moment a view of this page sees it, or
// from its start when it started after this page opened (by the page's
// clock against the server's: close enough for this). Each watched change
// to waiting or to an end shows one notification.
const notifySince = Date.now();

function notifyChange(id, status, live, created, what, body) {
  const before = notifyLast.get(id);
  notifyLast.set(id, status);
  if (before === status) return;
  if (before === undefined && !live && !(Date.parse(created) >= notifySince)) return; // older than this page: nothing it watched change
  if (status === "waiting" || endedStatuses.includes(status)) notifyShow(id, what, body);
}

// notifyWaiting says why a session waits, for its notification.
function notifyWaiting(reason) {
  return reason === "approval" ? "needs an approval" : reason === "stuck" ? "seems stuck and waits for you" : "waits for you";
}

// notifyEvent is called with each session.* event the open session page
// receives as it happens.
function notifyEvent(id, type, data) {
  const d = data.data || {};
  if (type === "session.waiting") {
    notifyChange(id, "waiting", true, null, notifyWaiting(d.reason), d.question || "");
  } else if (type === "session.ended") {
    notifyChange(id, d.status, true, null, "ended: " + d.status, d.answer || d.detail || "");
  } else if (type === "session.resumed" || type === "session.paused") {
    notifyLast.set(id, type === "session.paused" ? "paused" : "running");
  }
}

// notifyState is called with the state the session page loads first.
function notifyState(s) {
  const waiting = s.status === "waiting";
  notifyChange(s.id, s.status, false, s.started_at, waiting ? notifyWaiting(s.reason) : "ended: " + s.status, waiting ? s.question || "" : s.answer || "");
}

// notifySummary is called with each summary the sessions list receives.
function notifySummary(sum) {
  notifyChange(sum.id, sum.status, false, sum.created_at, sum.status === "waiting" ? "waits for you" : "ended: " + sum.status, cut(sum.task, 120));
}

function notifyShow(id, what, body) {
  if (!("Notification" in window) || Notification.permission !== "granted" || localStorage.getItem(notifyOptIn) !== "on") return;
  const title = "Session " + id + " " + what;
  try {
    const n = new Notification(title, { body: cut(body, 200), tag: id });
    n.onclick = () => { window.focus(); location.hash = "#/s/" + id; n.close(); };
  } catch (e) { return; } // a browser that only notifies from a service worker
  notifyRecent.unshift({ id, title: what, body: cut(body, 80) });
  notifyRecent.length = Math.min(notifyRecent.length, 20);
  if (notificationsCard.repaint) notificationsCard.repaint();
}
