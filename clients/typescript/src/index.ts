// The typed client of agentloop's HTTP API.
//
// Every request and response type comes from schema.ts, which
// openapi-typescript generates from server/openapi.json (`npm run
// generate`); requests go through openapi-fetch. Nothing here restates
// the API by hand except the two stream lines the log does not hold (a
// token delta and a tool-call timeline line, in stream.ts). history.ts
// wraps fork, rewind and compare in functions that throw refusals.

import createFetchClient, { type Client as FetchClient } from "openapi-fetch";
import { baseOf, headersOf, type ClientOptions } from "./options.js";
import type { components, operations, paths } from "./schema.js";

export type { components, operations, paths };
export type { ClientOptions };
export { ProblemError, isProblem, problemIn, problemOf, type Problem } from "./problem.js";
export {
  compareSessions,
  forkSession,
  listForks,
  previewRewind,
  rewindSession,
  type Comparison,
  type Created,
  type FileChange,
  type ForkRequest,
  type RewindRequest,
  type Rewound,
} from "./history.js";
export { durationSeconds, type Duration } from "./duration.js";
export {
  streamEvents,
  type Delta,
  type StreamItem,
  type StreamOptions,
  type ToolCallLine,
} from "./stream.js";

/** The API's named schemas, e.g. `Schemas["Summary"]`. */
export type Schemas = components["schemas"];
/** One event of a session's log, discriminated on `type`. */
export type Event = Schemas["Event"];
/** The event types, e.g. `"session.ended"`. */
export type EventType = Event["type"];
/** The event of type T, e.g. `EventOf<"approval.requested">`. */
export type EventOf<T extends EventType> = Extract<Event, { type: T }>;
/** A session's status. */
export type Status = Schemas["Status"];
/** The one-line view of a session, as lists return it. */
export type Summary = Schemas["Summary"];
/** The body of POST /v1/sessions. */
export type StartRequest = Schemas["StartRequest"];

/**
 * The media types the client reads: JSON and problem+json. The two
 * event streams are read with streamEvents, and /metrics is plain text.
 */
export type JSONMedia = `application/${string}json`;

/** The client: openapi-fetch's, typed by the API's paths. */
export type Client = FetchClient<paths, JSONMedia>;

/**
 * createClient returns a client whose methods are the API's paths:
 * `client.POST("/v1/sessions", { body: { task: "…" } })` resolves to
 * `{ data, error, response }`, data typed by the 2xx schema and error by
 * the problem+json body of a refusal.
 */
export function createClient(options: ClientOptions): Client {
  return createFetchClient<paths, JSONMedia>({
    baseUrl: baseOf(options),
    headers: headersOf(options),
    fetch: options.fetch,
  });
}
