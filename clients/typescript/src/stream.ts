// A session's event stream (Server-Sent Events) that survives dropped
// connections.
//
// What a reader may rely on:
//   - Log events arrive in order, each once: seq rises by one from the
//     first event after options.after. After a dropped connection the
//     stream reconnects with Last-Event-ID set to the last seq it yielded,
//     and the server resumes right after it; an event at or below that
//     seq is never yielded again.
//   - The stream ends (the generator returns) when the server closes it
//     after the session's last session.ended, or at once when the session
//     had already ended before options.after (the server answers 204). A
//     log may hold more than one session.ended — one per run of a rewound
//     session, and a fork's starts with its original's — and the stream
//     goes on past all but the last.
//   - Token deltas and tool-call timeline lines are not in the log: they
//     have no seq, and those sent while a connection was down are gone.
//   - A refusal (404, 401, 403, 400) is thrown as a ProblemError at once,
//     and a 200 that is not text/event-stream (baseUrl is not an agentloop
//     server) as an Error at once; network errors, cut streams, 429 and 5xx are
//     retried, and thrown only after options.retries reconnects in a row
//     brought no event.
//   - A connection that brings nothing, not even the server's heartbeat
//     comment, for options.idleTimeoutMs is taken as dropped (a network
//     that vanished without closing it) and replaced.
//   - Breaking out of the loop, or options.signal, closes the connection.

import { baseOf, headersOf, type ClientOptions } from "./options.js";
import { ProblemError, problemOf } from "./problem.js";
import type { components } from "./schema.js";

type Event = components["schemas"]["Event"];

/** A piece of a model reply as it streams (SSE event: delta). */
export interface Delta {
  type: "delta";
  text?: string;
  /** Which tool call of the reply the fragment belongs to. */
  tool_call_index?: number;
  /** Set on the first fragment of a tool call. */
  tool_name?: string;
  arguments_fragment?: string;
  reasoning?: string;
}

/** A line of the tool-call timeline, sent after each tool.finished. */
export interface ToolCallLine {
  type: "tool_call";
  session_id: string;
  tool_name: string;
  args_summary: string;
  result_summary: string;
  iteration_number: number;
  is_error?: boolean;
}

/** What the stream yields: log events, deltas and timeline lines, told apart by type. */
export type StreamItem = Event | Delta | ToolCallLine;

export interface StreamOptions extends ClientOptions {
  /** Start after this sequence number (0, the default: from the first event). */
  after?: number;
  /** Ends the stream (the pending read rejects with the signal's reason). */
  signal?: AbortSignal;
  /** Reconnects in a row that bring no log event before the stream fails; 5 by default. */
  retries?: number;
  /** The first wait before a reconnect, in milliseconds (250 by default); it doubles up to 5 s. */
  retryDelayMs?: number;
  /**
   * How long a connection may bring nothing at all (the server sends a
   * heartbeat every 15 s by default) before it is taken as dropped and
   * replaced, in milliseconds; 45000 by default, 0 never.
   */
  idleTimeoutMs?: number;
  /** Called before each reconnect with the seq it resumes after and what broke. */
  onReconnect?: (info: { after: number; attempt: number; error: unknown }) => void;
}

/**
 * streamEvents yields a session's events from options.after on, live,
 * until the session ends (its last session.ended). See this file's opening comment for what it
 * guarantees.
 *
 *   for await (const ev of streamEvents(id, { baseUrl })) {
 *     if (ev.type === "session.ended") console.log(ev.data.answer);
 *   }
 */
export async function* streamEvents(
  sessionId: string,
  options: StreamOptions,
): AsyncGenerator<StreamItem, void, undefined> {
  const url = `${baseOf(options)}/v1/sessions/${encodeURIComponent(sessionId)}/events`;
  const doFetch = options.fetch ?? ((req: Request) => fetch(req));
  const retries = options.retries ?? 5;
  let delay = options.retryDelayMs ?? 250;
  let last = options.after ?? 0;
  let attempt = 0;
  // ended: the last log event this connection yielded is a
  // session.ended, so a stream the server closes now reached the
  // session's end.
  let ended = false;
  const idle = options.idleTimeoutMs ?? 45_000;
  for (;;) {
    ended = false; // this connection has yielded nothing yet
    const conn = new AbortController();
    const signal = options.signal ? AbortSignal.any([options.signal, conn.signal]) : conn.signal;
    let broke: unknown;
    let retryAfter = 0;
    let timer: ReturnType<typeof setTimeout> | undefined;
    // touch restarts the idle clock; when it runs out the connection is
    // aborted, and the pending fetch or read rejects with the reason.
    const touch = () => {
      if (idle > 0) {
        clearTimeout(timer);
        timer = setTimeout(
          () => conn.abort(new Error(`nothing arrived for ${idle} ms, not even a heartbeat: the connection is taken as dropped`)),
          idle,
        );
      }
    };
    touch();
    try {
      const headers: Record<string, string> = { ...headersOf(options), Accept: "text/event-stream" };
      if (last > 0) {
        headers["Last-Event-ID"] = String(last);
      }
      const res = await doFetch(new Request(url, { headers, signal }));
      if (res.status === 204) {
        return; // the session ended at or before `last`
      }
      if (res.ok && !(res.headers.get("Content-Type") ?? "").startsWith("text/event-stream")) {
        throw new NotAStreamError(
          `${url} answered ${res.status} with ${res.headers.get("Content-Type") || "no Content-Type"}, not an event stream: is ${baseOf(options)} an agentloop server?`,
        );
      }
      if (res.ok && res.body) {
        for await (const msg of messages(res.body, touch)) {
          let item: StreamItem;
          if (msg.event === "delta") {
            item = { ...(JSON.parse(msg.data) as Omit<Delta, "type">), type: "delta" };
          } else if (msg.event === "tool_call") {
            item = JSON.parse(msg.data) as ToolCallLine;
          } else if (msg.event === "error") {
            // The server could not read the log further; a new
            // connection reads it again from `last`.
            throw new Error(`the server ended the stream: ${msg.data}`);
          } else if (msg.id !== undefined) {
            const ev = JSON.parse(msg.data) as Event;
            if (ev.seq <= last) {
              continue; // already yielded before a reconnect
            }
            last = ev.seq;
            ended = ev.type === "session.ended";
            attempt = 0;
            delay = options.retryDelayMs ?? 250;
            item = ev;
          } else {
            continue; // a kind of message this client does not know
          }
          // The idle clock stops while the caller holds the item: a slow
          // caller is not a silent connection.
          clearTimeout(timer);
          yield item;
          touch();
        }
        if (ended) {
          return;
        }
        broke = new Error(`the event stream of session ${sessionId} closed after seq ${last} before session.ended`);
      } else if (res.status === 429 || res.status >= 500) {
        retryAfter = Number(res.headers.get("Retry-After")) * 1000 || 0;
        broke = new ProblemError(await problemOf(res));
      } else {
        throw new ProblemError(await problemOf(res));
      }
    } catch (err) {
      if (err instanceof ProblemError || err instanceof NotAStreamError || options.signal?.aborted) {
        throw err;
      }
      broke = err;
    } finally {
      clearTimeout(timer);
      conn.abort(); // closes this connection, whatever ended it
    }
    attempt++;
    if (attempt > retries) {
      throw new Error(
        `session ${sessionId}: the event stream failed ${attempt} times in a row after seq ${last}: ${describe(broke)}`,
        { cause: broke },
      );
    }
    options.onReconnect?.({ after: last, attempt, error: broke });
    await sleep(Math.max(delay, retryAfter), options.signal);
    delay = Math.min(delay * 2, 5000);
  }
}

/** An answer that is not an event stream: retrying will not help. */
class NotAStreamError extends Error {
  override name = "NotAStreamError";
}

/** One Server-Sent Event. */
interface Message {
  id?: string;
  event: string;
  data: string;
}

/**
 * messages parses a text/event-stream body by the WHATWG rules (lines
 * end in \n, \r\n or \r; comments are skipped; data lines join with \n),
 * except that an id belongs only to the message that carries it: here
 * only log events have one. A message cut off by the end of the body is
 * dropped, never half-read. onRead is called for every chunk read.
 */
async function* messages(body: ReadableStream<Uint8Array>, onRead: () => void): AsyncGenerator<Message> {
  const decoder = new TextDecoder();
  const reader = body.getReader();
  let buf = "";
  let id: string | undefined;
  let event = "";
  let data: string[] = [];
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) {
        return;
      }
      onRead();
      buf += decoder.decode(value, { stream: true });
      for (;;) {
        const end = buf.search(/[\r\n]/);
        if (end < 0 || (buf[end] === "\r" && end === buf.length - 1)) {
          break; // no whole line yet (a \r may be the first half of \r\n)
        }
        const line = buf.slice(0, end);
        buf = buf.slice(buf.startsWith("\r\n", end) ? end + 2 : end + 1);
        if (line === "") {
          if (data.length > 0) {
            yield { id, event: event || "message", data: data.join("\n") };
          }
          id = undefined;
          event = "";
          data = [];
          continue;
        }
        if (line.startsWith(":")) {
          continue; // a comment: the server's heartbeat
        }
        const colon = line.indexOf(":");
        const field = colon < 0 ? line : line.slice(0, colon);
        let value = colon < 0 ? "" : line.slice(colon + 1);
        if (value.startsWith(" ")) {
          value = value.slice(1);
        }
        if (field === "data") {
          data.push(value);
        } else if (field === "event") {
          event = value;
        } else if (field === "id" && !value.includes("\0")) {
          id = value;
        }
      }
    }
  } finally {
    await reader.cancel().catch(() => {});
  }
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

function describe(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
