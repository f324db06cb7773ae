// streamEvents against what a server or a network may send: line endings
// the real server never sends and messages split anywhere (a body read in
// chunks of our choosing, through the fetch option), and over loopback
// HTTP: cut streams, overload answers, a page that is not a stream. Run by client_node_test.go (`node test/stream.test.mjs` after
// a build works too: it needs no agentloop server).

import assert from "node:assert/strict";
import http from "node:http";
import { after, before, test } from "node:test";

import { ProblemError, streamEvents } from "../dist/index.js";

// Each test sets how the next requests are answered: handlers[0] answers
// the first, and so on; requests records what they asked.
let handlers = [];
let requests = [];
let server;
let baseUrl;

before(async () => {
  server = http.createServer((req, res) => {
    requests.push({ url: req.url, lastEventId: req.headers["last-event-id"] ?? null, auth: req.headers.authorization ?? null, req });
    const handle = handlers.shift();
    if (!handle) {
      res.writeHead(500, { "Content-Type": "application/problem+json" });
      res.end(JSON.stringify({ type: "about:blank", title: "Internal Server Error", status: 500, detail: "the test expected no more requests" }));
      return;
    }
    handle(req, res);
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  baseUrl = `http://127.0.0.1:${server.address().port}`;
});
after(() => server.close());

function reset(...hs) {
  handlers = hs;
  requests = [];
}

function event(seq, type, data = {}) {
  return { session_id: "s1", seq, type, v: 1, time: "2026-01-02T03:04:05Z", data };
}

// sse answers 200 with body written as the given chunks, one write each,
// then ends the response (or leaves it open when end is false).
function sse(chunks, { end = true } = {}) {
  return async (_req, res) => {
    res.writeHead(200, { "Content-Type": "text/event-stream" });
    for (const c of chunks) {
      await new Promise((resolve) => res.write(c, resolve));
    }
    if (end) {
      res.end();
    }
  };
}

async function collect(options) {
  const items = [];
  for await (const item of streamEvents("s1", { baseUrl, retryDelayMs: 1, ...options })) {
    items.push(item);
  }
  return items;
}

test("messages split anywhere, CRLF and CR line ends, comments, multi-line data", async () => {
  const ended = event(2, "session.ended", { status: "completed", reason: "completed", answer: "héllo ✓" });
  const text =
    ": a comment first\r\n\r\n" +
    `id: 1\r\nevent: session.started\r\ndata: ${JSON.stringify(event(1, "session.started", { task: "t" }))}\r\n\r\n` +
    // A delta whose JSON is split over two data lines (joined with \n,
    // which JSON reads as white space).
    'event: delta\rdata: {"text":\rdata: "hé ✓"}\r\r' +
    `event: tool_call\ndata: ${JSON.stringify({ type: "tool_call", session_id: "s1", tool_name: "read_file", args_summary: "{}", result_summary: "ok", iteration_number: 1 })}\n\n` +
    `id: 2\nevent: session.ended\ndata: ${JSON.stringify(ended)}\n\n`;
  // Split every n bytes of the UTF-8 encoding, for several n: inside
  // characters, between \r and \n, between a message's lines.
  const bytes = Buffer.from(text);
  for (const n of [1, 2, 3, 5, 8, bytes.length]) {
    const chunks = [];
    for (let i = 0; i < bytes.length; i += n) {
      chunks.push(bytes.subarray(i, i + n));
    }
    // The body is read in exactly these chunks (a socket could merge them).
    const asked = [];
    const fetchChunks = async (req) => {
      asked.push(req);
      let i = 0;
      const body = new ReadableStream({
        pull(c) {
          if (i < chunks.length) {
            c.enqueue(new Uint8Array(chunks[i++]));
          } else {
            c.close();
          }
        },
      });
      return new Response(body, { status: 200, headers: { "Content-Type": "text/event-stream" } });
    };
    const items = await collect({ apiKey: "al_test", fetch: fetchChunks });
    assert.deepEqual(
      items.map((i) => i.type),
      ["session.started", "delta", "tool_call", "session.ended"],
      `in chunks of ${n} bytes`,
    );
    assert.equal(items[1].text, "hé ✓");
    assert.equal(items[2].tool_name, "read_file");
    assert.equal(items[3].data.answer, "héllo ✓");
    assert.equal(asked.length, 1);
    assert.equal(asked[0].url, `${baseUrl}/v1/sessions/s1/events`);
    assert.equal(asked[0].headers.get("Authorization"), "Bearer al_test");
    assert.equal(asked[0].headers.get("Accept"), "text/event-stream");
    assert.equal(asked[0].headers.get("Last-Event-ID"), null);
  }
});

test("a cut message is dropped and read again after the reconnect", async () => {
  const e2 = `id: 2\nevent: iteration.started\ndata: ${JSON.stringify(event(2, "iteration.started"))}\n\n`;
  reset(
    // The first connection ends in the middle of event 2.
    sse([`id: 1\nevent: session.started\ndata: ${JSON.stringify(event(1, "session.started"))}\n\n`, e2.slice(0, 30)]),
    // The server resumes after 1, but sends 1 again: it is not repeated.
    sse([`id: 1\nevent: session.started\ndata: ${JSON.stringify(event(1, "session.started"))}\n\n`, e2,
      `id: 3\nevent: session.ended\ndata: ${JSON.stringify(event(3, "session.ended", { status: "failed", reason: "error" }))}\n\n`]),
  );
  const reconnects = [];
  const items = await collect({ onReconnect: (i) => reconnects.push(i) });
  assert.deepEqual(items.map((i) => i.seq), [1, 2, 3]);
  assert.deepEqual(requests.map((r) => r.lastEventId), [null, "1"]);
  assert.equal(reconnects.length, 1);
  assert.equal(reconnects[0].after, 1);
  assert.match(reconnects[0].error.message, /closed after seq 1 before session.ended/);
});

test("503 and 429 are retried, then the stream goes on from options.after", async () => {
  const busy = (status) => (_req, res) => {
    res.writeHead(status, { "Content-Type": "application/problem+json", "Retry-After": "0" });
    res.end(JSON.stringify({ type: "about:blank", title: "busy", status, detail: "try again" }));
  };
  reset(busy(503), busy(429), sse([`id: 8\nevent: session.ended\ndata: ${JSON.stringify(event(8, "session.ended", { status: "completed", reason: "completed" }))}\n\n`]));
  const reconnects = [];
  const items = await collect({ after: 7, onReconnect: (i) => reconnects.push(i) });
  assert.deepEqual(items.map((i) => i.seq), [8]);
  assert.deepEqual(requests.map((r) => r.lastEventId), ["7", "7", "7"]);
  assert.deepEqual(reconnects.map((r) => [r.attempt, r.error instanceof ProblemError && r.error.status]), [[1, 503], [2, 429]]);
});

test("after options.retries failures in a row the stream throws what broke", async () => {
  const down = (_req, res) => {
    res.writeHead(502, { "Content-Type": "text/html" });
    res.end("<html>bad gateway</html>");
  };
  reset(down, down, down);
  await assert.rejects(collect({ retries: 2 }), (err) => {
    assert.match(err.message, /session s1: the event stream failed 3 times in a row after seq 0: 502 .*bad gateway/);
    assert.ok(err.cause instanceof ProblemError);
    return true;
  });
  assert.equal(requests.length, 3);
});

test("a page that is not an event stream fails at once", async () => {
  reset((_req, res) => {
    res.writeHead(200, { "Content-Type": "text/html" });
    res.end("<html>a dashboard</html>");
  });
  await assert.rejects(collect({}), /answered 200 with text\/html, not an event stream: is http:\/\/127\.0\.0\.1:\d+ an agentloop server\?/);
  assert.equal(requests.length, 1);
});

test("breaking out of the loop closes the connection", async () => {
  reset(sse([`id: 1\nevent: session.started\ndata: ${JSON.stringify(event(1, "session.started"))}\n\n`], { end: false }));
  for await (const item of streamEvents("s1", { baseUrl })) {
    assert.equal(item.type, "session.started");
    break;
  }
  const { req } = requests[0];
  if (!req.socket.destroyed) {
    await new Promise((resolve) => req.socket.once("close", resolve));
  }
  assert.equal(requests.length, 1);
});

test("aborting the signal ends a stream that is waiting", async () => {
  reset(sse([": open\n\n"], { end: false }));
  const stop = new AbortController();
  const items = [];
  const reading = (async () => {
    for await (const item of streamEvents("s1", { baseUrl, signal: stop.signal })) {
      items.push(item);
    }
  })();
  // Abort once the server has the request: the read is then waiting.
  while (requests.length === 0) {
    await new Promise((resolve) => setImmediate(resolve));
  }
  stop.abort(new Error("enough"));
  await assert.rejects(reading, /enough/);
  assert.deepEqual(items, []);
  assert.equal(requests.length, 1);
});

test("a connection that goes silent is taken as dropped and replaced", async () => {
  const ended = sse([`id: 2\nevent: session.ended\ndata: ${JSON.stringify(event(2, "session.ended", { status: "completed", reason: "completed" }))}\n\n`]);
  reset(
    // One event, then nothing, not even a heartbeat, and no close: a
    // network that vanished.
    sse([`id: 1\nevent: session.started\ndata: ${JSON.stringify(event(1, "session.started"))}\n\n`], { end: false }),
    // Every later connection gets the end at once (on a machine slow
    // enough to let the idle clock run out there too, the next one does).
    ended, ended, ended, ended,
  );
  const reconnects = [];
  const items = await collect({ idleTimeoutMs: 300, onReconnect: (i) => reconnects.push(i) });
  assert.deepEqual(items.map((i) => i.seq), [1, 2]);
  assert.deepEqual(requests.map((r) => r.lastEventId), [null, ...Array(requests.length - 1).fill("1")]);
  assert.match(reconnects[0].error.message, /nothing arrived for 300 ms, not even a heartbeat/);
});

test("a caller slower than the idle clock is not a silent connection", async () => {
  // The server sends the second event only once the caller is done with
  // the first: until then the connection is silent.
  let release;
  const released = new Promise((resolve) => (release = resolve));
  reset(async (_req, res) => {
    res.writeHead(200, { "Content-Type": "text/event-stream" });
    res.write(`id: 1\nevent: session.started\ndata: ${JSON.stringify(event(1, "session.started"))}\n\n`);
    await released;
    res.end(`id: 2\nevent: session.ended\ndata: ${JSON.stringify(event(2, "session.ended", { status: "completed", reason: "completed" }))}\n\n`);
  });
  const reconnects = [];
  const seqs = [];
  for await (const item of streamEvents("s1", { baseUrl, idleTimeoutMs: 1000, onReconnect: (i) => reconnects.push(i) })) {
    seqs.push(item.seq);
    if (item.seq === 1) {
      // Hold the first item for three idle periods.
      await new Promise((resolve) => setTimeout(resolve, 3000));
      release();
    }
  }
  assert.deepEqual(seqs, [1, 2]);
  assert.deepEqual(reconnects, []);
  assert.equal(requests.length, 1);
});

// A rewound session's log holds a session.ended for each run: the stream
// goes on past the first to the one the server closes the stream after.
test("a log with more than one session.ended is read to its end", async () => {
  const line = (ev) => `id: ${ev.seq}\nevent: ${ev.type}\ndata: ${JSON.stringify(ev)}\n\n`;
  reset(sse([
    line(event(1, "session.started", { task: "t" })),
    line(event(2, "session.ended", { status: "completed", reason: "completed", answer: "first" })),
    line(event(3, "session.rewound", { to_iteration: 1 })),
    line(event(4, "session.ended", { status: "completed", reason: "completed", answer: "second" })),
  ]));
  const items = await collect({});
  assert.deepEqual(items.map((i) => `${i.seq} ${i.type}`), ["1 session.started", "2 session.ended", "3 session.rewound", "4 session.ended"]);
  assert.equal(items[3].data.answer, "second");
  assert.equal(requests.length, 1);
});

// Only a stream closed right after a session.ended it carried ends the
// reading: one cut after it, and then one that brings nothing, are
// reconnected.
test("a session.ended from an earlier connection ends nothing", async () => {
  const line = (ev) => `id: ${ev.seq}\nevent: ${ev.type}\ndata: ${JSON.stringify(ev)}\n\n`;
  reset(
    async (_req, res) => {
      res.writeHead(200, { "Content-Type": "text/event-stream" });
      await new Promise((resolve) => res.write(line(event(1, "session.ended", { status: "completed", reason: "completed" })), resolve));
      await new Promise((resolve) => res.write("id: 2\nevent: session.rew", resolve));
      res.socket.destroy(); // cut mid-message
    },
    sse([]),
    sse([line(event(2, "session.rewound", { to_iteration: 1 })), line(event(3, "session.ended", { status: "completed", reason: "completed" }))]),
  );
  const items = await collect({});
  assert.deepEqual(items.map((i) => `${i.seq} ${i.type}`), ["1 session.ended", "2 session.rewound", "3 session.ended"]);
  assert.deepEqual(requests.map((r) => r.lastEventId), [null, "1", "1"]);
});
