// The official A2A JavaScript SDK's client driving a Hitch agent through a
// whole approval flow. Run by internal/a2a's TestJSClient:
//
//   node flow.mjs BASE_URL AGENT USER PROTOCOL   (PROTOCOL: 1.0 or 0.3)
//
// The agent must have the files tools with delete_file needing approval, and
// files js-<PROTOCOL>.txt in its sandbox. Prints one line per step; exits 1
// on the first failed check.
import { Role, TaskState } from "@a2a-js/sdk";
import {
  ClientFactory, ClientFactoryOptions, DefaultAgentCardResolver, JsonRpcTransportFactory,
  createAuthenticatingFetchWithRetry,
} from "@a2a-js/sdk/client";

const [base, agentName, user, protocol] = process.argv.slice(2);
const fetchImpl = createAuthenticatingFetchWithRetry(fetch, {
  headers: async () => ({ Authorization: `Bearer ${user}` }),
  shouldRetryWithHeaders: async () => undefined,
});
const legacy = protocol === "0.3";

function check(cond, what, got) {
  if (!cond) {
    console.error(`FAIL ${what}: ${JSON.stringify(got, (k, v) => (typeof v === "bigint" ? String(v) : v))}`);
    process.exit(1);
  }
  console.log(`ok ${what}`);
}

let n = 0;
const message = (parts, taskId = "") => ({
  messageId: `js-${protocol}-${++n}`, contextId: "", taskId, role: Role.ROLE_USER, parts,
  metadata: undefined, extensions: [], referenceTaskIds: [],
});
const text = (value) => ({ content: { $case: "text", value }, metadata: undefined, filename: "", mediaType: "" });
const data = (value) => ({ content: { $case: "data", value }, metadata: undefined, filename: "", mediaType: "application/json" });
const send = (msg) => ({ tenant: "", message: msg, configuration: undefined, metadata: undefined });
const outputOf = (task) => task.artifacts.flatMap((a) => a.parts).map((p) => p.content?.value ?? "").join("");

const resolver = new DefaultAgentCardResolver({ fetchImpl, legacyCompat: { enabled: true } });
const card = await resolver.resolve(`${base}/a2a/${agentName}/`);
check(card.name === agentName && card.capabilities?.streaming === true, "agent card", card.name);
const iface = card.supportedInterfaces.find((i) => i.protocolVersion === protocol);
check(iface && iface.url === `${base}/a2a/${agentName}`, `interface ${protocol} in the card`, card.supportedInterfaces);
const factory = new ClientFactory(ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
  transports: [new JsonRpcTransportFactory({ fetchImpl, legacyCompat: { enabled: true } })],
  cardResolver: resolver,
}));
const client = await factory.createFromAgentCard({ ...card, supportedInterfaces: [iface] });

// Send: the answer as the output artifact.
let task = await client.sendMessage(send(message([text("hello from js")])));
check(task.status.state === TaskState.TASK_STATE_COMPLETED && outputOf(task) === "echo: hello from js", "send", task.status);

// Stream: the task, the answer's chunks on one artifact, then completed.
const events = [];
for await (const ev of client.sendMessageStream(send(message([text("one two three")])))) events.push(ev);
const kinds = events.map((e) => e.payload?.$case ?? (e.kind === "status-update" ? "statusUpdate" : e.kind === "artifact-update" ? "artifactUpdate" : e.kind));
check(kinds[0] === "task", "stream begins with the task", kinds);
const chunks = events.filter((e, i) => kinds[i] === "artifactUpdate").map((e) => e.payload.value);
check(chunks.map((c) => c.artifact.parts.map((p) => p.content.value).join("")).join("") === "echo: one two three", "streamed answer", chunks.length);
check(chunks[0].append === false && chunks.slice(1).every((c) => c.append === true) && chunks.at(-1).lastChunk === true, "chunk flags", chunks.map((c) => [c.append, c.lastChunk]));
const last = events.at(-1).payload.value;
check(kinds.at(-1) === "statusUpdate" && last.status.state === TaskState.TASK_STATE_COMPLETED, "stream ends completed", kinds.at(-1));

// An approval through input-required: nothing runs before it, once after it.
task = await client.sendMessage(send(message([text(`/call delete_file {"path": "js-${protocol}.txt"}`)])));
check(task.status.state === TaskState.TASK_STATE_INPUT_REQUIRED, "input-required", task.status.state);
const pending = task.status.message.parts.find((p) => p.content?.$case === "data").content.value.pending_approvals;
check(pending.length === 1 && pending[0].name === "delete_file", "pending calls as a data part", pending);
const done = await client.sendMessage(send(message([data({ action: "approve" })], task.id)));
check(done.id === task.id && done.status.state === TaskState.TASK_STATE_COMPLETED && outputOf(done).includes("delete_file success"), "approved and completed", outputOf(done));
const got = await client.getTask({ tenant: "", id: task.id, historyLength: undefined });
check(got.status.state === TaskState.TASK_STATE_COMPLETED, "get task", got.status.state);

// Cancel of a paused task.
const paused = await client.sendMessage(send(message([text(`/call delete_file {"path": "keep.txt"}`)])));
const canceled = await client.cancelTask({ tenant: "", id: paused.id, metadata: undefined });
check(canceled.status.state === TaskState.TASK_STATE_CANCELED, "cancel", canceled.status.state);

// A stream dropped after its first event, then resubscribed: the durable log
// replays it up to the pause.
const stream = client.sendMessageStream(send(message([text(`/call delete_file {"path": "later.txt"}`)])));
const first = (await stream.next()).value;
await stream.return();
const id = first.payload.value.id;
const again = [];
for await (const ev of client.resubscribeTask({ tenant: "", id })) again.push(ev);
check(again[0].payload.$case === "task" && again.at(-1).payload.value.status.state === TaskState.TASK_STATE_INPUT_REQUIRED,
  "resubscribe after a drop", again.map((e) => e.payload.$case));

console.log(`ALL OK ${protocol}`);
