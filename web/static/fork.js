// Rewind and fork on the session page: "Rewind to here" and "Fork from
// here" on each step, their dialogs, the "rewound" mark on steps a rewind
// set aside, and the fork tree (where a session came from, and its forks).
//
// What is offered, and why:
//   - Both actions need the workspace as it was at the step, so they are
//     offered on a step only when the session's state lists a live
//     checkpoint (its "checkpoints") taken at or before the step's end; a
//     server run with checkpoints off records none. The server has the
//     last word: its refusal (a 400 from the dry run or the fork) is
//     shown as it said it.
//   - Rewind is offered on ended and paused sessions only (the server
//     answers 409 to any other), fork on any session.
//   - Neither is offered on a step that is still running or was set
//     aside by an earlier rewind.
// Nothing here keeps a copy of the session's state: the page's render
// passes it in.
"use strict";

// forkRedraw calls render, the render of session id's page, if that page
// is still the one on screen: a read that ends after the person moved to
// another page never draws over it.
function forkRedraw(id, render) {
  if (forkOnScreen(id) && render) render();
}

// forkOnScreen says whether session id's page is the one on screen.
function forkOnScreen(id) {
  const m = location.hash.match(/^#\/s\/([A-Za-z0-9_-]+)/);
  return !!m && m[1] === id;
}

// forkCheckpointAtOrBefore says whether step n's workspace can be
// restored: a live checkpoint was taken at or before its end.
function forkCheckpointAtOrBefore(s, n) {
  return (s.checkpoints || []).some(c => c.iteration <= n);
}

// forkStepActions is what a step's heading carries: a "rewound" tag for a
// step set aside, else the buttons that make sense for it (possibly none).
function forkStepActions(s, it) {
  if (it.rewound) return el("span", { class: "rewound-tag", title: "A rewind set this step aside: it stays in the log, and is no longer part of the conversation" }, "rewound");
  if (!s || it.status === "in_progress" || !forkCheckpointAtOrBefore(s, it.number)) return null;
  const canRewind = endedStatuses.includes(s.status) || s.status === "paused";
  return el("span", { class: "fork-actions" },
    canRewind ? el("button", { class: "link", type: "button", "data-rewind": String(it.number), "aria-label": `Rewind to step ${it.number}`, onclick: () => forkRewindDialog(s, it.number) }, "Rewind to here") : null,
    el("button", { class: "link", type: "button", "data-fork": String(it.number), "aria-label": `Fork from step ${it.number}`, onclick: () => forkForkDialog(s, it.number) }, "Fork from here"));
}

// forkedOnto says whether step it ran on the model a fork was started
// with (rather than on a fallback): s is a fork, the step came after the
// fork point, and it ran on s's current model.
function forkedOnto(s, it) {
  return !!(s && s.forked_from && it.number > s.forked_from.iteration && it.model && it.model === s.current_model);
}

// forkDialog is the one dialog both actions use, emptied for each use.
function forkDialog() {
  let d = document.getElementById("fork-dialog");
  if (!d) {
    d = el("dialog", { id: "fork-dialog", class: "fork-dialog" });
    document.body.append(d);
  }
  if (d.open) d.close();
  return d;
}

const forkChangeWords = {
  added: "comes back (it was deleted after this step)",
  modified: "goes back to its content at this step",
  deleted: "is removed (it was created after this step)",
};

function forkFileList(files, id) {
  return el("ul", { class: "chg-list", id }, files.map(f => el("li", { "data-path": f.path, "data-change": f.change },
    el("span", { class: "chg chg-" + f.change, title: forkChangeWords[f.change] || f.change }, f.change), " ", el("code", {}, f.path))));
}

function forkSteps(ns) {
  if (!ns.length) return "";
  return ns.length === 1 ? `step ${ns[0]}` : `steps ${ns[0]}–${ns[ns.length - 1]}`;
}

// forkRewindDialog asks the server what rewinding to step n would do (a
// dry run, which changes nothing), shows it, and rewinds on confirmation.
async function forkRewindDialog(s, n) {
  const d = forkDialog();
  const what = el("div", { id: "rewind-preview" }, el("p", { class: "muted" }, "Reading what would change…"));
  const message = el("textarea", { id: "rewind-message", placeholder: "Optional: what the agent should do differently from here" });
  const resumes = el("p", { class: "muted small", id: "rewind-resumes" });
  const error = el("p", { class: "error", role: "alert", id: "rewind-error" });
  const ok = el("button", { class: "danger", id: "rewind-ok", type: "button", disabled: true }, "Rewind");
  const sayResume = () => {
    resumes.textContent = s.status === "paused" || message.value.trim()
      ? `The session resumes from the end of step ${n} at once${message.value.trim() ? ", with your message" : ""}.`
      : `The session is left paused at the end of step ${n}: resume it when you like, or give a message to resume it at once.`;
  };
  message.addEventListener("input", sayResume);
  sayResume();
  const ask = el("div", { id: "rewind-ask" }, el("label", { for: "rewind-message" }, "Message to the agent"), message, resumes);
  d.replaceChildren(el("form", { method: "dialog", "aria-labelledby": "rewind-title" },
    el("h2", { id: "rewind-title" }, `Rewind to step ${n}`),
    what, ask, error,
    el("div", { class: "row" },
      el("button", { type: "submit", value: "cancel", id: "rewind-cancel" }, "Cancel"), ok)));
  d.showModal();
  try {
    const r = await api("POST", `/v1/sessions/${encodeURIComponent(s.id)}/rewind`, { at: n, dry_run: true });
    const files = r.files || [], steps = r.rewound_steps || [];
    what.replaceChildren(
      files.length ? el("p", {}, `Restoring the workspace as it was after step ${n} changes ${files.length} file${files.length === 1 ? "" : "s"}:`)
        : el("p", { id: "rewind-nofiles" }, `The workspace already holds the files of step ${n}: no file changes.`),
      files.length ? forkFileList(files, "rewind-files") : "",
      el("p", { id: "rewind-steps" }, steps.length
        ? `${forkSteps(steps)[0].toUpperCase() + forkSteps(steps).slice(1)} ${steps.length === 1 ? "is" : "are"} set aside: kept in the log, marked rewound, no longer part of the conversation.`
        : `No step comes after step ${n}.`));
    ok.disabled = false;
  } catch (e) {
    what.replaceChildren(el("p", { class: "error", id: "rewind-refused" }, e.message));
    ask.hidden = true; // nothing to ask about a rewind the server refuses
    return;
  }
  ok.onclick = async () => {
    ok.disabled = true;
    error.textContent = "";
    const body = { at: n };
    if (message.value.trim()) body.message = message.value.trim();
    try {
      const r = await api("POST", `/v1/sessions/${encodeURIComponent(s.id)}/rewind`, body);
      d.close();
      toast(`Rewound to step ${n}` + (r.resumed ? "; the session resumed" : ""));
    } catch (e) { error.textContent = e.message; ok.disabled = false; }
  };
}

// forkForkDialog starts a fork of s at step n (optionally with another
// model and a message) and opens it.
function forkForkDialog(s, n) {
  const d = forkDialog();
  const modelIn = el("input", { id: "fork-model", placeholder: "the same: " + shortModel(s.current_model || s.model), size: "32" });
  const message = el("textarea", { id: "fork-message", placeholder: "Optional: a message the fork's model reads first" });
  const error = el("p", { class: "error", role: "alert", id: "fork-error" });
  const ok = el("button", { class: "primary", id: "fork-ok", type: "submit" }, "Fork");
  const form = el("form", { "aria-labelledby": "fork-title", onsubmit: async e => {
    e.preventDefault();
    ok.disabled = true;
    error.textContent = "";
    const body = { at: n };
    if (modelIn.value.trim()) body.model = modelIn.value.trim();
    if (message.value.trim()) body.message = message.value.trim();
    try {
      const r = await api("POST", `/v1/sessions/${encodeURIComponent(s.id)}/fork`, body);
      d.close();
      toast(`Fork ${r.id} started from step ${n}`);
      location.hash = "#/s/" + r.id;
    } catch (err) { error.textContent = err.message; ok.disabled = false; }
  } },
    el("h2", { id: "fork-title" }, `Fork from step ${n}`),
    el("p", {}, `A new session starts from the end of step ${n}: this session's conversation up to there, and its own copy of the workspace as it was then. This session is not changed.`),
    el("label", { for: "fork-model" }, "Model"), modelIn,
    el("label", { for: "fork-message" }, "Message to the agent"), message, error,
    el("div", { class: "row" }, el("button", { type: "button", id: "fork-cancel", onclick: () => d.close() }, "Cancel"), ok));
  d.replaceChildren(form);
  d.showModal();
  modelIn.focus();
}
