// The official MCP TypeScript SDK's client against a real `agentloop
// serve` at $AGENTLOOP_URL/mcp with the key $AGENTLOOP_KEY: it starts a
// session with the scripted model $AGENTLOOP_SCRIPT, waits for it, reads
// its answer and its log (a resource), and checks a refusal. It prints
// what it saw as one JSON object; the Go test holds that against the
// server's own record. Any failure exits non-zero with the reason.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const url = new URL("/mcp", process.env.AGENTLOOP_URL);
const key = process.env.AGENTLOOP_KEY;

function connect(withKey) {
  const client = new Client({ name: "agentloop-e2e", version: "1.0.0" });
  const headers = withKey ? { Authorization: `Bearer ${withKey}` } : {};
  return client.connect(new StreamableHTTPClientTransport(url, { requestInit: { headers } })).then(() => client);
}

function fail(msg) {
  console.error(msg);
  process.exit(1);
}

// Without a key the server refuses the connection itself.
let refused = "";
try {
  await connect("");
} catch (e) {
  refused = String(e.message ?? e);
}
if (!refused) fail("connected without a key");

const client = await connect(key);
const { tools } = await client.listTools();
const names = tools.map((t) => t.name).sort();
for (const t of tools) {
  if (!t.inputSchema || !t.outputSchema) fail(`${t.name} has no input or output schema`);
}

// The SDK checks structuredContent against each tool's outputSchema.
const started = await client.callTool({
  name: "start_session",
  arguments: { task: "say hello", model: `script:${process.env.AGENTLOOP_SCRIPT}`, labels: { client: "typescript" } },
});
if (started.isError) fail(`start_session: ${JSON.stringify(started.content)}`);
const id = started.structuredContent.id;

const waited = await client.callTool({ name: "wait_session", arguments: { id, timeout_seconds: 60 } });
if (waited.isError) fail(`wait_session: ${JSON.stringify(waited.content)}`);

const got = await client.callTool({ name: "get_session", arguments: { id } });

const badStart = await client.callTool({ name: "start_session", arguments: { task: "x", approval: "auto" } });

const log = await client.readResource({ uri: `agentloop://sessions/${id}/events` });
const events = log.contents[0].text.trim().split("\n").map((l) => JSON.parse(l)).map((e) => [e.seq, e.type]);

const list = await client.callTool({ name: "list_sessions", arguments: { status: "completed" } });

await client.close();
console.log(JSON.stringify({
  refused,
  tools: names,
  id,
  started: started.structuredContent.status,
  waited: waited.structuredContent,
  answer: got.structuredContent.answer,
  bad_start: { isError: badStart.isError === true, text: badStart.content.map((c) => c.text).join("") },
  events,
  listed: list.structuredContent.sessions.map((s) => s.id),
}));
