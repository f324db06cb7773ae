// The protocol endpoints of a real `agentloop serve` (AGENTLOOP_URL),
// driven by the npm clients people use: @ag-ui/client's HttpAgent and the
// ai package's DefaultChatTransport + readUIMessageStream. What each
// client assembled is written to AGENTLOOP_RESULT for the Go test to hold
// against the sessions' logs.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { HttpAgent } from "@ag-ui/client";
import { DefaultChatTransport, readUIMessageStream } from "ai";

const URL = process.env.AGENTLOOP_URL;
const SCRIPTS = process.env.AGENTLOOP_SCRIPTS;
const RESULT = process.env.AGENTLOOP_RESULT;
assert.ok(URL && SCRIPTS && RESULT, "set AGENTLOOP_URL, AGENTLOOP_SCRIPTS and AGENTLOOP_RESULT");

const results = {};
after(() => writeFileSync(RESULT, JSON.stringify(results, null, 1)));

// Conversation IDs of this run: a rerun against the same server starts afresh.
const run = Date.now().toString(36);
let n = 0;
// script writes a scripted model and returns its model spec.
function script(steps) {
  const path = join(SCRIPTS, `script-${++n}.json`);
  writeFileSync(path, JSON.stringify({ stream_chunk: 4, steps }));
  return "script:" + path;
}

const planSteps = [
  { text: "I will plan first.", tool_calls: [{ name: "update_plan", arguments: { action: "create", goal: "look around", steps: ["list the files", "answer"] } }] },
  { text: "Listing.", tool_calls: [{ name: "list_dir", arguments: {} }, { name: "update_plan", arguments: { action: "update_step", step: 1, status: "completed", result: "empty" } }] },
  { tool_calls: [{ name: "update_plan", arguments: { action: "update_step", step: 2, status: "completed" } }, { name: "update_plan", arguments: { action: "complete" } }] },
  { text: "The workspace is empty; nothing to report." },
];

test("AG-UI: HttpAgent runs a session and assembles its messages, tool calls and plan", async () => {
  const agent = new HttpAgent({
    url: `${URL}/v1/agui`,
    threadId: `node-thread-plan-${run}`,
    initialMessages: [{ id: "u1", role: "user", content: "look around" }],
  });
  const types = [];
  const { result, newMessages } = await agent.runAgent(
    { runId: "run-1", forwardedProps: { model: script(planSteps) } },
    { onEvent: ({ event }) => { types.push(event.type); } },
  );
  assert.equal(types[0], "RUN_STARTED");
  assert.equal(types.at(-1), "RUN_FINISHED");
  assert.equal(result.status, "completed");
  assert.ok(newMessages.length > 0, "the run added messages");
  assert.equal(agent.messages[0].id, "u1");
  results.agui = { session: result.session_id, messages: structuredClone(agent.messages), state: structuredClone(agent.state), types };

  // The thread goes on after its session ended: the next run starts a new
  // session (same model) from the whole conversation.
  agent.addMessage({ id: "u2", role: "user", content: "and now?" });
  const next = await agent.runAgent({ runId: "run-2" });
  assert.equal(next.result.status, "completed");
  assert.notEqual(next.result.session_id, result.session_id);
  assert.equal(agent.messages.at(-1).content, "The workspace is empty; nothing to report.");
});

test("AG-UI: a run interrupted for an approval is resumed by the next run", async () => {
  const agent = new HttpAgent({
    url: `${URL}/v1/agui`,
    threadId: `node-thread-approve-${run}`,
    initialMessages: [{ id: "u1", role: "user", content: "write notes" }],
  });
  const model = script([
    { tool_calls: [{ id: "w1", name: "write_file", arguments: { path: "notes.txt", content: "hi" } }] },
    { text: "Wrote notes.txt." },
  ]);
  let outcome;
  await agent.runAgent({ runId: "r1", forwardedProps: { model, approval: "ask" } }, {
    onRunFinishedEvent: ({ event }) => { outcome = event.outcome; },
  });
  assert.equal(outcome?.type, "interrupt", JSON.stringify(outcome));
  assert.equal(outcome.interrupts[0].toolCallId, "w1");
  const { result } = await agent.runAgent({
    runId: "r2",
    resume: [{ interruptId: outcome.interrupts[0].id, status: "resolved", payload: { approved: true } }],
  });
  assert.equal(result.status, "completed");
  const tool = agent.messages.find((m) => m.role === "tool" && m.toolCallId === "w1");
  assert.ok(tool, "the approved call's result is a tool message: " + JSON.stringify(agent.messages));
  assert.equal(agent.messages.at(-1).content, "Wrote notes.txt.");
});

// chat sends messages as useChat does and reads the reply as it does.
// An answer that goes on with the last message, an assistant's (after
// approvals), is read into it, as useChat does.
async function chat(transport, chatId, messages, body) {
  const stream = await transport.sendMessages({ chatId, messages, trigger: "submit-message", messageId: undefined, abortSignal: undefined, body });
  const message = messages.at(-1).role === "assistant" ? structuredClone(messages.at(-1)) : undefined;
  let last;
  for await (const m of readUIMessageStream({ message, stream, terminateOnError: true })) last = m;
  return last;
}

test("AI SDK: readUIMessageStream assembles text, tool calls with inputs and outputs, and the finish", async () => {
  const transport = new DefaultChatTransport({ api: `${URL}/v1/ui-stream` });
  const message = await chat(transport, `node-chat-plan-${run}`, [{ id: "m1", role: "user", parts: [{ type: "text", text: "look around" }] }], { model: script(planSteps) });
  assert.equal(message.role, "assistant");
  assert.equal(message.metadata.status, "completed");
  const tools = message.parts.filter((p) => p.type === "dynamic-tool");
  assert.ok(tools.length > 0 && tools.every((p) => p.state === "output-available"), JSON.stringify(tools));
  // Nothing is under way any more: reconnecting finds no stream.
  assert.equal(await transport.reconnectToStream({ chatId: `node-chat-plan-${run}` }), null);
  results.ui = { session: message.metadata.session_id, message };
});

test("AI SDK: a chat answers the session's question and its approval request", async () => {
  const transport = new DefaultChatTransport({ api: `${URL}/v1/ui-stream` });
  const model = script([
    { text: "One question.", tool_calls: [{ name: "ask_user", arguments: { question: "Which file?" } }] },
    { tool_calls: [{ id: "w2", name: "write_file", arguments: { path: "notes.txt", content: "hi" } }] },
    { text: "Wrote notes.txt." },
  ]);
  const user1 = { id: "m1", role: "user", parts: [{ type: "text", text: "write notes" }] };
  const first = await chat(transport, `node-chat-ask-${run}`, [user1], { model, approval: "ask" });
  assert.equal(first.metadata.status, "waiting");
  assert.equal(first.metadata.detail, "Which file?");
  const user2 = { id: "m2", role: "user", parts: [{ type: "text", text: "notes.txt" }] };
  const second = await chat(transport, `node-chat-ask-${run}`, [user1, first, user2]);
  const call = second.parts.find((p) => p.type === "dynamic-tool" && p.toolCallId === "w2");
  assert.equal(call?.state, "approval-requested", JSON.stringify(second.parts));
  // What useChat's addToolApprovalResponse sends back.
  call.state = "approval-responded";
  call.approval = { id: call.approval.id, approved: true };
  const third = await chat(transport, `node-chat-ask-${run}`, [user1, first, user2, second]);
  assert.equal(third?.metadata?.status, "completed", JSON.stringify(third));
  assert.equal(third.id, second.id, "the answer goes on with the message that asked");
  const text = third.parts.filter((p) => p.type === "text").map((p) => p.text).join("");
  assert.equal(text, "Wrote notes.txt.");
  const done = third.parts.find((p) => p.type === "dynamic-tool" && p.toolCallId === "w2");
  assert.equal(done?.state, "output-available", JSON.stringify(third.parts));
});
