// Drives a real `agentloop serve` through the built client (dist/), the
// way a TypeScript program meets it. Run by client_node_test.go, which
// starts the server and sets:
//   AGENTLOOP_URL      the server, started with --auth keys and
//                      --allow-script-models
//   AGENTLOOP_KEY      an operator's key (starts and controls sessions)
//   AGENTLOOP_VIEWER_KEY  a viewer's key of the same tenant (only reads)
//   AGENTLOOP_SCRIPTS  a directory to write the scripted models' files in
//   AGENTLOOP_RESULT   where to write each session's streamed events, for
//                      the Go test to hold against the server's log
//
// Every session is a scripted model's, so each reply, tool call and wait
// is known; each test reads the events the client streamed, not timings.

import assert from "node:assert/strict";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import http from "node:http";
import { join } from "node:path";
import { after, before, test } from "node:test";

import {
  ProblemError,
  compareSessions,
  createClient,
  durationSeconds,
  forkSession,
  listForks,
  previewRewind,
  rewindSession,
  streamEvents,
} from "../dist/index.js";

const baseUrl = required("AGENTLOOP_URL");
const apiKey = required("AGENTLOOP_KEY");
const viewerKey = required("AGENTLOOP_VIEWER_KEY");
const scripts = required("AGENTLOOP_SCRIPTS");
const resultFile = required("AGENTLOOP_RESULT");
const client = createClient({ baseUrl, apiKey });
// Labels every session of this run, so lists filter to them alone.
const suite = `ts-${process.pid}`;
// What each session streamed: { case: { id, events: [[seq, type], …] } }.
const streamed = {};

function required(name) {
  const v = process.env[name];
  if (!v) {
    throw new Error(`${name} is not set: run this through client_node_test.go`);
  }
  return v;
}

function script(name, steps) {
  const path = join(scripts, `${name}.json`);
  writeFileSync(path, JSON.stringify({ description: name, steps }));
  return `script:${path}`;
}

async function start(name, body) {
  const { data, error, response } = await client.POST("/v1/sessions", {
    body: { ...body, labels: { suite, case: name } },
  });
  assert.equal(error, undefined, `start ${name}: ${JSON.stringify(error)}`);
  assert.equal(response.status, 201);
  assert.match(data.id, /\S/);
  return data.id;
}

// follow streams a session to its end, calling on(item) for each item,
// and checks the log events came in order, each once. Streams of one
// session after its first (options.after) add to what it recorded.
async function follow(name, id, on = async () => {}, options = {}) {
  const events = [];
  const others = [];
  for await (const item of streamEvents(id, { baseUrl, apiKey, retryDelayMs: 50, ...options })) {
    if (item.type === "delta" || item.type === "tool_call") {
      others.push(item);
    } else {
      assert.equal(item.session_id, id);
      assert.equal(item.seq, (events.at(-1)?.seq ?? options.after ?? 0) + 1, `seq after ${events.at(-1)?.type}`);
      events.push(item);
    }
    await on(item);
  }
  assert.equal(events.at(-1)?.type, "session.ended", `${name}: the stream ended before session.ended`);
  const { data: state } = await client.GET("/v1/sessions/{id}", { params: { path: { id } } });
  assert.equal(events.at(-1).seq, state.seq, `${name}: the stream ended at a session.ended before the session's last event`);
  const before = options.after ? (streamed[name]?.events ?? []) : [];
  streamed[name] = { id, events: [...before, ...events.map((e) => [e.seq, e.type])] };
  return { events, others, ended: events.at(-1) };
}

// A loopback proxy in front of the server that cuts the first event
// stream right after it has passed on approval.requested, as a dropped
// connection would, and records each stream request's Last-Event-ID.
let proxy;
let proxyUrl;
const streamRequests = [];
before(async () => {
  let cut = false;
  proxy = http.createServer((req, res) => {
    const isStream = (req.headers.accept ?? "").includes("text/event-stream");
    if (isStream) {
      streamRequests.push(req.headers["last-event-id"] ?? null);
    }
    const up = http.request(new URL(req.url, baseUrl), { method: req.method, headers: req.headers }, (upRes) => {
      res.writeHead(upRes.statusCode, upRes.headers);
      let seen = "";
      upRes.on("data", (chunk) => {
        seen += isStream && !cut ? chunk.toString() : "";
        const at = seen.indexOf("event: approval.requested\n");
        if (at < 0 || seen.indexOf("\n\n", at) < 0) {
          res.write(chunk);
          return;
        }
        // The client gets what came so far, then the connection closes
        // without the end of the response.
        cut = true;
        seen = "";
        upRes.destroy();
        res.write(chunk, () => res.socket.end());
      });
      upRes.on("end", () => res.end());
    });
    up.on("error", () => res.destroy());
    req.pipe(up);
  });
  await new Promise((resolve) => proxy.listen(0, "127.0.0.1", resolve));
  proxyUrl = `http://127.0.0.1:${proxy.address().port}`;
});
after(() => proxy.close());

after(() => {
  writeFileSync(resultFile, JSON.stringify(streamed, null, 2));
});

test("create a session and stream it to the end", { timeout: 60_000 }, async () => {
  const answer = "Hello from a scripted model.";
  const id = await start("hello", { task: "say hello", model: script("hello", [{ text: answer, finish_reason: "stop" }]) });
  const { events, ended } = await follow("hello", id);
  assert.equal(events[0].type, "session.started");
  assert.equal(ended.type, "session.ended");
  assert.equal(ended.data.status, "completed");
  assert.equal(ended.data.reason, "completed");
  assert.equal(ended.data.answer, answer);

  const { data: state } = await client.GET("/v1/sessions/{id}", { params: { path: { id } } });
  assert.equal(state.status, "completed");
  // Durations are strings of seconds: the session's, its step's, and its
  // limits' (the server's default session limit is 30 minutes).
  const seconds = /^\d+(\.\d+)?s$/;
  assert.match(state.duration, seconds);
  assert.match(state.iterations[0].duration, seconds);
  assert.ok(durationSeconds(state.duration) >= durationSeconds(state.iterations[0].duration));
  assert.equal(state.limits.timeout, "1800s");
  assert.equal(durationSeconds(state.limits.timeout), 1800);
  assert.equal(durationSeconds(1_500_000_000), 1.5, "an older server's nanoseconds");
  assert.throws(() => durationSeconds("1m30s"), /not an agentloop duration/);

  // The stored page holds the same events the stream delivered.
  const { data: page } = await client.GET("/v1/sessions/{id}/events", { params: { path: { id }, query: { limit: 1000 } } });
  assert.deepEqual(
    page.events.map((e) => [e.seq, e.type]),
    events.map((e) => [e.seq, e.type]),
  );

  // Past the end of an ended session the server answers 204 and the
  // stream ends at once, after one request.
  const requests = [];
  const rest = [];
  const counting = (req) => {
    requests.push(req.headers.get("Last-Event-ID"));
    return fetch(req);
  };
  for await (const item of streamEvents(id, { baseUrl, apiKey, after: ended.seq, fetch: counting })) {
    rest.push(item);
  }
  assert.deepEqual(rest, []);
  assert.deepEqual(requests, [String(ended.seq)]);
});

test("reply to a session waiting for an answer", { timeout: 60_000 }, async () => {
  const said = "You chose blue, a fine color.";
  const model = script("reply", [
    { tool_calls: [{ name: "ask_user", arguments: { question: "Which color?" } }] },
    {
      text: said,
      tool_calls: [{ name: "ask_user", arguments: { question: "Anything else?" } }],
      stream_chunk: 5,
      expect: { last_message_role: "user", last_message_contains: "blue" },
    },
    { text: "Done.", expect: { last_message_contains: "nothing else" } },
  ]);
  const id = await start("reply", { task: "ask me for a color", model });
  const questions = [];
  let deltas = "";
  const reply = async (text) => {
    const { data, error } = await client.POST("/v1/sessions/{id}/reply", { params: { path: { id } }, body: { text } });
    assert.equal(error, undefined, JSON.stringify(error));
    assert.equal(data.id, id);
  };
  const { ended } = await follow("reply", id, async (item) => {
    if (item.type === "session.waiting") {
      assert.equal(item.data.reason, "question");
      questions.push(item.data.question);
      if (questions.length === 1) {
        await reply("blue");
      }
    }
    if (item.type === "delta") {
      deltas += item.text ?? "";
    }
    // The second reply waits for the deltas of the text before it: the
    // session waits meanwhile, so its stream stays open until they came.
    if (questions.length === 2 && deltas === said) {
      deltas += " (answered)";
      await reply("nothing else");
    }
  });
  assert.deepEqual(questions, ["Which color?", "Anything else?"]);
  assert.equal(ended.data.status, "completed");
  assert.equal(ended.data.answer, "Done.");
});

test("approve a call with edited arguments; a dropped stream resumes after the last event", { timeout: 60_000 }, async () => {
  const model = script("approve", [
    { tool_calls: [{ name: "write_file", arguments: { path: "note.txt", content: "written through the TS client\n" } }] },
    { text: "I wrote note.txt.", expect: { last_message_role: "tool" } },
  ]);
  const id = await start("approve", { task: "write a note", model, approval: "ask" });
  const reconnects = [];
  let decided;
  const { events, others, ended } = await follow(
    "approve",
    id,
    async (item) => {
      if (item.type === "approval.requested") {
        assert.equal(item.data.name, "write_file");
        assert.deepEqual(item.data.input, { path: "note.txt", content: "written through the TS client\n" });
        const { data, error } = await client.POST("/v1/sessions/{id}/approvals/{call}", {
          params: { path: { id, call: item.data.call_id } },
          // An edit: the call runs with the arguments given here.
          body: { approve: true, args_hash: item.data.args_hash, arguments: { path: "edited.txt", content: "edited\n" } },
        });
        assert.equal(error, undefined, JSON.stringify(error));
        decided = data;
      }
    },
    { baseUrl: proxyUrl, onReconnect: (info) => reconnects.push(info) },
  );
  assert.equal(decided?.applied, true, JSON.stringify(decided));
  assert.equal(ended.data.status, "completed", JSON.stringify(ended.data));
  assert.equal(ended.data.answer, "I wrote note.txt.");

  // The proxy cut the first stream; the client reconnected once, saying
  // the last seq it had, and got the rest without a gap (follow checked
  // that seq rose by one).
  const requested = events.find((e) => e.type === "approval.requested");
  assert.equal(reconnects.length, 1, JSON.stringify(reconnects));
  assert.ok(reconnects[0].after >= requested.seq, `resumed after ${reconnects[0].after}, before approval.requested ${requested.seq}`);
  assert.deepEqual(streamRequests, [null, String(reconnects[0].after)]);

  const decision = events.find((e) => e.type === "approval.decided");
  assert.equal(decision.data.approved, true);
  assert.deepEqual(decision.data.edited_input, { path: "edited.txt", content: "edited\n" });
  const started = events.find((e) => e.type === "tool.started");
  assert.deepEqual(started.data.input, { path: "edited.txt", content: "edited\n" });
  const finished = events.find((e) => e.type === "tool.finished");
  assert.equal(finished.data.name, "write_file");
  assert.notEqual(finished.data.is_error, true, finished.data.output);
  const line = others.find((o) => o.type === "tool_call");
  assert.equal(line?.tool_name, "write_file");
  assert.equal(line?.session_id, id);
});

test("terminate a waiting session", { timeout: 60_000 }, async () => {
  const model = script("terminate", [{ tool_calls: [{ name: "ask_user", arguments: { question: "Go on?" } }] }]);
  const id = await start("terminate", { task: "wait for me", model });
  const { ended } = await follow("terminate", id, async (item) => {
    if (item.type === "session.waiting") {
      const { data, error } = await client.POST("/v1/sessions/{id}/terminate", {
        params: { path: { id } },
        body: { reason: "different_approach" },
      });
      assert.equal(error, undefined, JSON.stringify(error));
      assert.equal(data.applied, true, JSON.stringify(data));
    }
  });
  assert.equal(ended.data.status, "terminated");
  assert.equal(ended.data.reason, "different_approach");
});

test("list sessions with filters and pages", { timeout: 60_000 }, async () => {
  const list = async (query) => {
    const { data, error } = await client.GET("/v1/sessions", { params: { query } });
    assert.equal(error, undefined, JSON.stringify(error));
    return data;
  };
  const mine = await list({ label: [`suite=${suite}`] });
  assert.deepEqual(mine.sessions.map((s) => s.labels?.case).sort(), ["approve", "hello", "reply", "terminate"]);
  assert.equal(mine.next_cursor, undefined);

  const terminated = await list({ label: [`suite=${suite}`], status: "terminated" });
  assert.deepEqual(
    terminated.sessions.map((s) => [s.labels?.case, s.status, s.reason]),
    [["terminate", "terminated", "different_approach"]],
  );
  const hello = await list({ label: [`suite=${suite}`, "case=hello"], status: "completed,failed" });
  assert.deepEqual(hello.sessions.map((s) => s.id), [streamed.hello.id]);

  // Two pages of two: the first names the next, the last names none.
  const first = await list({ label: [`suite=${suite}`], limit: 2 });
  assert.equal(first.sessions.length, 2);
  assert.ok(first.next_cursor, "the first page names the next");
  const second = await list({ label: [`suite=${suite}`], limit: 2, cursor: first.next_cursor });
  assert.equal(second.sessions.length, 2);
  assert.equal(second.next_cursor, undefined);
  assert.deepEqual(
    [...first.sessions, ...second.sessions].map((s) => s.id),
    mine.sessions.map((s) => s.id),
  );
});

test("a refusal is a typed problem", { timeout: 60_000 }, async () => {
  const { data, error, response } = await client.GET("/v1/sessions/{id}", { params: { path: { id: "no-such-session" } } });
  assert.equal(data, undefined);
  assert.equal(response.status, 404);
  assert.match(response.headers.get("Content-Type") ?? "", /^application\/problem\+json/);
  assert.equal(error.status, 404);
  assert.equal(error.title, "Not Found");
  assert.match(error.detail, /no-such-session/);

  const bad = await client.GET("/v1/sessions", { params: { query: { status: "finished" } } });
  assert.equal(bad.response.status, 400);
  assert.equal(bad.error.status, 400);
  assert.match(bad.error.detail, /finished/);

  // The stream throws the problem at once: a 404 is not retried.
  const reconnects = [];
  await assert.rejects(
    async () => {
      for await (const _ of streamEvents("no-such-session", { baseUrl, apiKey, onReconnect: (i) => reconnects.push(i) })) {
        // nothing arrives
      }
    },
    (err) => err instanceof ProblemError && err.status === 404 && err.problem.detail.includes("no-such-session"),
  );
  assert.deepEqual(reconnects, []);
});

test("the key goes with every request, the stream's too", { timeout: 60_000 }, async () => {
  const id = streamed.hello.id;
  // Without a key: 401, typed, from the client and from the stream.
  const anonymous = createClient({ baseUrl });
  const { error, response } = await anonymous.GET("/v1/sessions/{id}", { params: { path: { id } } });
  assert.equal(response.status, 401);
  assert.equal(error.status, 401);
  assert.match(error.detail, /\S/);
  await assert.rejects(
    async () => {
      for await (const _ of streamEvents(id, { baseUrl })) {
        // nothing arrives
      }
    },
    (err) => err instanceof ProblemError && err.status === 401,
  );

  // A viewer reads, streams and lists, and may not start a session.
  const viewer = createClient({ baseUrl, apiKey: viewerKey });
  const { data: state } = await viewer.GET("/v1/sessions/{id}", { params: { path: { id } } });
  assert.equal(state.status, "completed");
  const seqs = [];
  for await (const ev of streamEvents(id, { baseUrl, apiKey: viewerKey })) {
    seqs.push(ev.seq);
  }
  assert.deepEqual(seqs, streamed.hello.events.map(([seq]) => seq));
  const refused = await viewer.POST("/v1/sessions", { body: { task: "not allowed" } });
  assert.equal(refused.response.status, 403);
  assert.equal(refused.error.status, 403);
  assert.match(refused.error.detail, /\S/);
});

// approveEach approves every call session id asks about: the server asks
// before each write (it was started without --yes). What it waits for is
// read from the session's state, not from the event: a fork's log starts
// with its original's requests, long decided.
function approveEach(id) {
  const approved = new Set();
  return async (item) => {
    if (item.type !== "approval.requested") {
      return;
    }
    const { data: state } = await client.GET("/v1/sessions/{id}", { params: { path: { id } } });
    for (const p of state.pending_approvals ?? []) {
      if (approved.has(p.call_id)) {
        continue;
      }
      approved.add(p.call_id);
      const { data, error } = await client.POST("/v1/sessions/{id}/approvals/{call}", {
        params: { path: { id, call: p.call_id } },
        body: { approve: true, args_hash: p.args_hash },
      });
      assert.equal(error, undefined, JSON.stringify(error));
      assert.equal(data.applied, true, JSON.stringify(data));
    }
  };
}

// The files of a workspace the server wrote, by relative path (the test
// runs on the server's machine).
function filesIn(dir, names) {
  const out = {};
  for (const n of names) {
    const path = join(dir, n);
    if (existsSync(path)) {
      out[n] = readFileSync(path, "utf8");
    }
  }
  return out;
}

test("rewind (a dry run, then with a message), fork at a step, list forks, compare", { timeout: 90_000 }, async () => {
  const names = ["a.txt", "b.txt", "c.txt"];
  const write = (path, content) => ({ tool_calls: [{ name: "write_file", arguments: { path, content } }] });
  const answer = "Wrote a.txt and b.txt.";
  // Four steps, three of them writing files; the server checkpoints the
  // workspace after each. A rewound session's script skips the replies
  // its log keeps, so after a rewind to step 1 it plays steps 2-4 again.
  const model = script("rewind", [write("a.txt", "one\n"), write("b.txt", "two\n"), write("a.txt", "one\nthree\n"), { text: answer }]);
  const id = await start("rewind", { task: "write two notes", model });
  const first = await follow("rewind", id, approveEach(id));
  assert.equal(first.ended.data.status, "completed", JSON.stringify(first.ended.data));
  const { data: done } = await client.GET("/v1/sessions/{id}", { params: { path: { id } } });
  assert.match(done.workspace ?? "", /\S/, "the session has a workspace");
  const finalFiles = { "a.txt": "one\nthree\n", "b.txt": "two\n" };
  assert.deepEqual(filesIn(done.workspace, names), finalFiles);

  // A dry run lists what going back to step 1 would do, and does nothing.
  const dry = await previewRewind(client, id, 1);
  assert.equal(dry.session_id, id);
  assert.equal(dry.at, 1);
  assert.equal(dry.resumed, false);
  assert.deepEqual(dry.rewound_steps, [2, 3, 4]);
  assert.deepEqual(dry.files, [
    { path: "a.txt", change: "modified" },
    { path: "b.txt", change: "deleted" },
  ]);
  assert.deepEqual(filesIn(done.workspace, names), finalFiles, "a dry run changed the files");
  const { data: unchanged } = await client.GET("/v1/sessions/{id}", { params: { path: { id } } });
  assert.equal(unchanged.seq, first.ended.seq, "a dry run wrote to the log");

  // For real, with a message: the session resumes from step 1 and runs
  // to its end again; the stream goes on after the first session.ended.
  const message = "Write b.txt again, then finish.";
  const rewound = await rewindSession(client, id, { at: 1, message });
  assert.equal(rewound.resumed, true);
  assert.deepEqual(rewound.rewound_steps, [2, 3, 4]);
  assert.deepEqual(rewound.files, dry.files);
  const second = await follow("rewind", id, approveEach(id), { after: first.ended.seq });
  assert.equal(second.ended.data.status, "completed", JSON.stringify(second.ended.data));
  assert.equal(second.ended.data.answer, answer);
  const { data: again } = await client.GET("/v1/sessions/{id}", { params: { path: { id } } });
  assert.deepEqual(
    again.iterations.map((it) => `${it.number}${it.rewound ? " rewound" : ""}`),
    ["1", "2 rewound", "3 rewound", "4 rewound", "2", "3", "4"],
  );
  const live = again.iterations.filter((it) => !it.rewound).flatMap((it) => it.messages ?? []);
  assert.ok(
    live.some((m) => m.role === "user" && m.content === message),
    `the rewind's message is not in the live steps' messages: ${JSON.stringify(live)}`,
  );
  assert.deepEqual(filesIn(again.workspace, names), finalFiles);

  // A fork at step 2 with another scripted model and a message: it runs
  // in a copy of the files as of step 2; the original stays as it was.
  const forkMessage = "Write c.txt instead of going on.";
  const forkModel = script("fork", [
    { ...write("c.txt", "forked\n"), expect: { last_message_role: "user", last_message_contains: forkMessage } },
    { text: "Wrote c.txt in the fork.", expect: { last_message_role: "tool" } },
  ]);
  const created = await forkSession(client, id, { at: 2, model: forkModel, message: forkMessage });
  assert.notEqual(created.id, id);
  assert.equal(created.url, `/v1/sessions/${created.id}`);
  // Its log starts with the original's, first session.ended included:
  // the stream goes on to the fork's own end.
  const forked = await follow("fork", created.id, approveEach(created.id));
  assert.ok(
    forked.events.filter((e) => e.type === "session.ended").length >= 2,
    "the fork's log holds its original's session.ended before its own",
  );
  assert.equal(forked.ended.data.status, "completed", JSON.stringify(forked.ended.data));
  assert.equal(forked.ended.data.answer, "Wrote c.txt in the fork.");
  const { data: fork } = await client.GET("/v1/sessions/{id}", { params: { path: { id: created.id } } });
  assert.deepEqual(fork.forked_from, { id, iteration: 2 });
  assert.notEqual(fork.workspace, again.workspace);
  assert.deepEqual(filesIn(fork.workspace, names), { "a.txt": "one\n", "b.txt": "two\n", "c.txt": "forked\n" });
  assert.deepEqual(filesIn(again.workspace, names), finalFiles, "forking changed the original's files");

  // Listed as the original's one fork.
  const forks = await listForks(client, id);
  assert.deepEqual(
    forks.map((s) => [s.id, s.forked_from]),
    [[created.id, { id, iteration: 2 }]],
  );
  assert.deepEqual(await listForks(client, created.id), []);

  // Compared, by a viewer (it changes nothing): outcomes, the steps
  // paired by number, and the diff from the original's files to the fork's.
  const viewer = createClient({ baseUrl, apiKey: viewerKey });
  const cmp = await compareSessions(viewer, id, created.id);
  assert.equal(cmp.a.id, id);
  assert.equal(cmp.b.id, created.id);
  assert.deepEqual([cmp.a.status, cmp.b.status], ["completed", "completed"]);
  assert.deepEqual([cmp.a.answer, cmp.b.answer], [answer, "Wrote c.txt in the fork."]);
  assert.equal(cmp.a.forked_from, null);
  assert.deepEqual(cmp.b.forked_from, { id, iteration: 2 });
  assert.deepEqual([cmp.a.steps, cmp.b.steps], [4, 4], "live steps: the rewound ones are not counted");
  assert.ok(durationSeconds(cmp.a.duration) > 0 && durationSeconds(cmp.b.duration) > 0);
  assert.deepEqual(
    cmp.steps.map((st) => st.number),
    [1, 2, 3, 4],
  );
  // Each side of a step: its model's script and its tool calls. Steps 1
  // and 2 are the fork's copy of the original's; from 3 the fork's model ran.
  const side = (st) => (st ? `${st.model.split("/").at(-1)} ${st.tool_calls.map((c) => `${c.tool_name}:${c.status}`).join(",")}` : "none");
  assert.deepEqual(
    cmp.steps.map((st) => [side(st.a), side(st.b)]),
    [
      ["rewind.json write_file:success", "rewind.json write_file:success"],
      ["rewind.json write_file:success", "rewind.json write_file:success"],
      ["rewind.json write_file:success", "fork.json write_file:success"],
      ["rewind.json ", "fork.json "],
    ],
  );
  assert.ok(cmp.steps.every((st) => durationSeconds(st.a?.duration) >= 0 && durationSeconds(st.b?.duration) >= 0));
  assert.deepEqual(cmp.files, [
    { path: "a.txt", change: "modified" },
    { path: "c.txt", change: "added" },
  ]);
  assert.match(cmp.diff, /^-three$/m);
  assert.match(cmp.diff, /^\+forked$/m);
  assert.notEqual(cmp.diff_truncated, true);
});

test("fork, rewind and compare throw the server's refusals", { timeout: 60_000 }, async () => {
  const id = streamed.rewind.id;
  const refused = async (what, call, status, detail) => {
    await assert.rejects(call, (err) => {
      assert.ok(err instanceof ProblemError, `${what}: ${err}`);
      assert.equal(err.status, status, `${what}: ${err.message}`);
      assert.equal(err.problem.status, status);
      assert.match(err.problem.detail, detail, what);
      return true;
    });
  };
  await refused("rewind past the last step", () => previewRewind(client, id, 99), 400, /99/);
  await refused("fork of no session", () => forkSession(client, "no-such-session", { at: 1 }), 404, /no-such-session/);
  await refused("compare with no b", () => compareSessions(client, id, ""), 400, /\bb\b/);
  const viewer = createClient({ baseUrl, apiKey: viewerKey });
  await refused("a viewer's fork", () => forkSession(viewer, id, { at: 1 }), 403, /\S/);
  await refused("a viewer's rewind", () => rewindSession(viewer, id, { at: 1, dry_run: true }), 403, /\S/);
  // A model not written as PROVIDER/NAME is refused before anything runs.
  await refused("a fork with a bad model", () => forkSession(client, id, { at: 1, model: "gpt-nothing" }), 400, /PROVIDER\/NAME/);
});
