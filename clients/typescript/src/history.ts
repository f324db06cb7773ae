// Helpers over a session's history, which the server keeps as workspace
// checkpoints beside its log: fork a session at a step, rewind it to one
// (or only ask what that would change), list a session's forks, and
// compare two sessions. Each is one request through the typed client;
// a refusal throws a ProblemError, as streamEvents does.

import { ProblemError, problemIn } from "./problem.js";
import type { Client } from "./index.js";
import type { components } from "./schema.js";

type Schemas = components["schemas"];
/** The body of POST /v1/sessions/{id}/fork: the step, and optionally a model and a message. */
export type ForkRequest = Schemas["ForkRequest"];
/** The body of POST /v1/sessions/{id}/rewind. */
export type RewindRequest = Schemas["RewindRequest"];
/** What a rewind did, or with dry_run would do: the files, the steps set aside, whether it runs again. */
export type Rewound = Schemas["Rewound"];
/** One path a rewind or a comparison changes: added, modified or deleted. */
export type FileChange = Schemas["FileChange"];
/** Two sessions side by side: outcomes, steps paired by number, and the diff of their files. */
export type Comparison = Schemas["Comparison"];
/** The answer to a start or a fork: the new session's id, status and path. */
export type Created = Schemas["Created"];
/** The one-line view of a session, as lists return it. */
type Summary = Schemas["Summary"];

/**
 * forkSession starts a new session from the end of step `at` of session
 * id: its log up to there, its files as that step's checkpoint holds
 * them, then `model` and `message` when given. The original is not
 * changed. It resolves to the fork, already running.
 */
export async function forkSession(client: Client, id: string, request: ForkRequest): Promise<Created> {
  return answer(await client.POST("/v1/sessions/{id}/fork", { params: { path: { id } }, body: request }));
}

/**
 * rewindSession takes a stopped (ended or paused) session back to the end
 * of step `at`, its files included. With a message, or for a paused
 * session, it runs again (`resumed`); an ended one without a message
 * waits, paused. With `dry_run` nothing changes: see previewRewind.
 */
export async function rewindSession(client: Client, id: string, request: RewindRequest): Promise<Rewound> {
  return answer(await client.POST("/v1/sessions/{id}/rewind", { params: { path: { id } }, body: request }));
}

/**
 * previewRewind says what rewinding session id to step `at` would do,
 * changing nothing: `files` as the workspace is now (added: the file
 * comes back; deleted: it goes away) and the `rewound_steps` set aside.
 */
export async function previewRewind(client: Client, id: string, at: number): Promise<Rewound> {
  return rewindSession(client, id, { at, dry_run: true });
}

/**
 * compareSessions sets sessions a and b side by side: each one's outcome
 * and totals, their `steps` paired by number, the `files` that differ and
 * git's unified `diff` from a's final files to b's.
 */
export async function compareSessions(client: Client, a: string, b: string): Promise<Comparison> {
  return answer(await client.GET("/v1/sessions/compare", { params: { query: { a, b } } }));
}

/**
 * listForks lists the sessions forked from session id (its direct forks,
 * newest first), following the list's pages to the last.
 */
export async function listForks(client: Client, id: string): Promise<Summary[]> {
  const forks: Summary[] = [];
  let cursor: string | undefined;
  do {
    const page = answer(
      await client.GET("/v1/sessions", { params: { query: { forked_from: id, limit: 500, ...(cursor ? { cursor } : {}) } } }),
    );
    forks.push(...page.sessions);
    cursor = page.next_cursor;
  } while (cursor);
  return forks;
}

/**
 * answer is a request's data, or its refusal thrown as a ProblemError:
 * the server's problem+json body, or one made from the status when the
 * body was not.
 */
function answer<T>(result: { data?: T; error?: unknown; response: Response }): T {
  if (!result.response.ok) {
    throw new ProblemError(problemIn(result.error, result.response));
  }
  if (result.data === undefined) {
    // Every operation here answers a JSON body on success.
    throw new Error(`${result.response.url} answered ${result.response.status} with no body`);
  }
  return result.data;
}
