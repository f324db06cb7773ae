// The README's example, typechecked against the built package by
// `npm run typecheck`: the lines marked @ts-expect-error must stay type
// errors, so a client whose types decayed to `any` fails the check.

import { createClient, durationSeconds, streamEvents, type EventOf, type Status } from "@agentloop/client";

const baseUrl = process.env.AGENTLOOP_URL ?? "http://127.0.0.1:7420";
const client = createClient({ baseUrl });

const { data: created, error } = await client.POST("/v1/sessions", {
  body: { task: "List the Go files and say what each does", labels: { team: "docs" } },
});
if (error) {
  throw new Error(`${error.status} ${error.title}: ${error.detail}`);
}
const id: string = created.id;

for await (const ev of streamEvents(id, { baseUrl })) {
  switch (ev.type) {
    case "delta":
      process.stdout.write(ev.text ?? "");
      break;
    case "approval.requested":
      await approve(id, ev);
      break;
    case "session.ended":
      console.log(`\n${ev.data.status} (${ev.data.reason}): ${ev.data.answer ?? ""}`);
      break;
  }
}

async function approve(session: string, ev: EventOf<"approval.requested">): Promise<void> {
  // An edit: the call runs with other arguments (here, a path of its own).
  const input = ev.data.input as Record<string, unknown>;
  const { error } = await client.POST("/v1/sessions/{id}/approvals/{call}", {
    params: { path: { id: session, call: ev.data.call_id } },
    body: { approve: true, args_hash: ev.data.args_hash, arguments: { ...input, path: "notes/reviewed.txt" } },
  });
  if (error) {
    throw new Error(error.detail);
  }
}

const { data: page } = await client.GET("/v1/sessions", {
  params: { query: { status: "completed,failed", label: ["team=docs"], limit: 10 } },
});
for (const s of page?.sessions ?? []) {
  const status: Status = s.status;
  console.log(s.id, status, s.reason ?? "", s.tokens);
}

// The types are real: each of these is an error.
// @ts-expect-error: "done" is not a Status
const notAStatus: Status = "done";
// @ts-expect-error: a task is a string
await client.POST("/v1/sessions", { body: { task: 42 } });
// @ts-expect-error: the path needs its {id}
await client.GET("/v1/sessions/{id}", {});
// @ts-expect-error: an event's seq is a number
const seq: string = (await client.GET("/v1/sessions/{id}/events", { params: { path: { id } } })).data!.events[0]!.seq;
const { error: missing } = await client.GET("/v1/sessions/{id}", { params: { path: { id: "nope" } } });
// @ts-expect-error: a problem has no field "message" (it has detail)
void missing?.message;
// Durations are strings of seconds ("1.5s"); durationSeconds reads them.
const { data: state } = await client.GET("/v1/sessions/{id}", { params: { path: { id } } });
console.log(`took ${durationSeconds(state?.duration)} s, step 1 ${durationSeconds(state?.iterations?.[0]?.duration)} s`);
// @ts-expect-error: a duration is a string of seconds, not a number
const nanos: number = state!.duration;
void notAStatus;
void seq;
void nanos;
