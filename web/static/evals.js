// The evals page: runs of `agentloop eval` (sessions labelled eval=RUN),
// scored per model and per task the way the command scores them — a try
// passes when its session ends as the task expects (completed, unless
// labelled eval_expect) and every verification check passes.
"use strict";

function evalsView(run) {
  const ctl = new AbortController();
  const page = el("div", {}, el("h1", {}, run ? "Eval " + run : "Evals"), el("p", { class: "muted" }, "Loading…"));
  main().replaceChildren(page);
  (run ? showRun(run) : showRuns()).catch(e => page.replaceChildren(el("h1", {}, "Evals"), el("p", { class: "error" }, e.message)));

  async function showRuns() {
    const d = await api("GET", "/v1/sessions?limit=500");
    const runs = new Map();
    for (const s of d.sessions) {
      const l = s.labels || {};
      if (!l.eval) continue;
      const r = runs.get(l.eval) || { suite: l.eval_suite, models: new Set(), tries: 0, when: s.created_at };
      r.models.add(l.eval_model); r.tries++;
      if (s.created_at < r.when) r.when = s.created_at;
      runs.set(l.eval, r);
    }
    page.replaceChildren(el("h1", {}, "Evals"),
      runs.size ? el("table", { id: "eval-runs" }, el("tr", {}, ["Run", "Suite", "Models", "Tries", "Started"].map(h => el("th", {}, h))),
        [...runs].map(([id, r]) => el("tr", { "data-run": id }, el("td", {}, el("a", { href: "#/evals/" + id }, id)), el("td", {}, r.suite || ""),
          el("td", {}, [...r.models].map(shortModel).join(", ")), el("td", {}, String(r.tries)), el("td", {}, new Date(r.when).toLocaleString()))))
        : el("p", { class: "muted" }, "No evals yet. Compare models on a suite of tasks with: agentloop eval examples/evals/starter/suite.yaml --model A --model B"));
  }

  async function showRun(run) {
    const d = await api("GET", "/v1/sessions?limit=500&label=" + encodeURIComponent("eval=" + run));
    const tries = await Promise.all(d.sessions.map(s => api("GET", "/v1/sessions/" + s.id).then(st => scoreTry(s, st))));
    tries.sort((a, b) => a.model.localeCompare(b.model) || a.task.localeCompare(b.task) || a.try - b.try);
    const models = [...new Set(tries.map(t => t.model))], tasks = [...new Set(tries.map(t => t.task))];
    const row = (first, ts) => {
      const n = ts.length, passed = ts.filter(t => t.passed).length, mean = f => n ? ts.reduce((a, t) => a + f(t), 0) / n : 0;
      return el("tr", {}, first, el("td", { class: "num" }, `${passed}/${n}`), el("td", { class: "num" }, n ? Math.round(100 * passed / n) + "%" : "—"),
        el("td", { class: "num" }, mean(t => t.steps).toFixed(1)), el("td", { class: "num" }, String(Math.round(mean(t => t.tokens)))),
        el("td", { class: "num" }, fmtCost(ts.reduce((a, t) => a + t.cost, 0))), el("td", { class: "num" }, mean(t => t.seconds).toFixed(1) + " s"));
    };
    const head = cols => el("tr", {}, cols.map(h => el("th", {}, h)));
    const stats = ["Passed", "Rate", "Steps", "Tokens", "Cost", "Time"];
    page.replaceChildren(el("h1", {}, "Eval " + run), el("p", { class: "muted" }, `suite ${tries[0] ? tries[0].suite : "?"} · ${tries.length} tries`),
      el("h2", {}, "Models"),
      el("table", { id: "eval-models" }, head(["Model", ...stats]), models.map(m => row(el("td", { title: m }, shortModel(m)), tries.filter(t => t.model === m)))),
      el("h2", {}, "Tasks"),
      el("table", { id: "eval-tasks" }, head(["Task", "Model", ...stats]), tasks.flatMap(k => models.map(m =>
        row([el("td", {}, k), el("td", { title: m }, shortModel(m))], tries.filter(t => t.task === k && t.model === m))))),
      el("h2", {}, "Tries"),
      el("ul", { id: "eval-tries" }, tries.map(t => el("li", { class: t.passed ? "" : "error" },
        el("a", { href: "#/s/" + t.id }, t.id), ` ${t.task} · ${shortModel(t.model)} · try ${t.try} · `, t.passed ? "passed" : "not passed: " + t.why))));
  }

  return { stop: () => ctl.abort() };
}

function scoreTry(sum, st) {
  const l = sum.labels || {};
  const expect = l.eval_expect ? l.eval_expect.split(",") : ["completed"];
  const checked = (st.verify || []).length > 0, outcome = st.verification ? st.verification.outcome : "";
  let why = "";
  if (!expect.includes(st.status)) why = "ended " + st.status + (st.reason && st.reason !== st.status ? ` (${st.reason})` : "");
  else if (checked && outcome !== "pass") why = "verification: " + (outcome || "not run");
  return { id: sum.id, suite: l.eval_suite, model: l.eval_model, task: l.eval_task, try: Number(l.eval_try), passed: !why, why,
    steps: (st.iterations || []).length, tokens: (st.usage.input_tokens || 0) + (st.usage.output_tokens || 0), cost: st.cost_usd || 0,
    seconds: durSecs(st.duration) };
}
