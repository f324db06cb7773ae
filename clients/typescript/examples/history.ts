// The README's fork, rewind and compare example, typechecked against the
// built package by `npm run typecheck`: the lines marked @ts-expect-error
// must stay type errors, so helpers whose types decayed to `any` fail.

import {
  ProblemError,
  compareSessions,
  createClient,
  forkSession,
  listForks,
  previewRewind,
  rewindSession,
  type FileChange,
} from "@agentloop/client";

const client = createClient({ baseUrl: process.env.AGENTLOOP_URL ?? "http://127.0.0.1:7420" });
const id = process.argv[2] ?? "a-session-id";

// What going back to the end of step 2 would do to the files; nothing changes.
const preview = await previewRewind(client, id, 2);
for (const f of preview.files) console.log(f.change, f.path);
console.log("steps set aside:", preview.rewound_steps);

// Back to step 2, files included; with a message the session runs again from there.
const { resumed } = await rewindSession(client, id, { at: 2, message: "Keep notes.txt short." });
console.log(resumed ? "running again" : "paused at step 2");

// A new session from the end of step 2, on another model; the original is not changed.
const fork = await forkSession(client, id, { at: 2, model: "openai/gpt-4.1", message: "Try it in Go." });
console.log((await listForks(client, id)).map((s) => `${s.id} from step ${s.forked_from?.iteration}`));

// Side by side: outcomes, steps paired by number, the diff from id's files to the fork's.
const cmp = await compareSessions(client, id, fork.id);
console.log(cmp.a.status, cmp.b.status, cmp.files, cmp.diff);

// A refusal is thrown, typed.
try {
  await previewRewind(client, id, 99);
} catch (err) {
  if (!(err instanceof ProblemError)) throw err;
  console.log(err.status, err.problem.detail);
}

// The types are real: each of these is an error.
// @ts-expect-error: a change is added, modified or deleted
const renamed: FileChange["change"] = "renamed";
// @ts-expect-error: a fork needs the step it starts from
await forkSession(client, id, { model: "openai/gpt-4.1" });
// @ts-expect-error: a step is a number
await rewindSession(client, id, { at: "2" });
// @ts-expect-error: a comparison's steps are numbered, not named
const stepName: string = cmp.steps[0]!.number;
void renamed;
void stepName;
