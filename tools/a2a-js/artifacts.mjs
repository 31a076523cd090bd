// The official A2A JavaScript SDK's client reading a Hitch agent's
// artifacts. Run by internal/a2a's TestJSClientArtifacts:
//
//   node artifacts.mjs BASE_URL AGENT USER
//
// The agent must have the artifacts group (save_artifact) and the local
// model. Prints one line per step; exits 1 on the first failed check.
import { Role, TaskState } from "@a2a-js/sdk";
import {
  ClientFactory, ClientFactoryOptions, DefaultAgentCardResolver, JsonRpcTransportFactory,
  createAuthenticatingFetchWithRetry,
} from "@a2a-js/sdk/client";

const [base, agentName, user] = process.argv.slice(2);
const auth = { Authorization: `Bearer ${user}` };
const fetchImpl = createAuthenticatingFetchWithRetry(fetch, {
  headers: async () => auth,
  shouldRetryWithHeaders: async () => undefined,
});

function check(cond, what, got) {
  if (!cond) {
    console.error(`FAIL ${what}: ${JSON.stringify(got, (k, v) => (typeof v === "bigint" ? String(v) : v instanceof Uint8Array ? `bytes(${v.length})` : v))}`);
    process.exit(1);
  }
  console.log(`ok ${what}`);
}

let n = 0;
const text = (value) => ({ content: { $case: "text", value }, metadata: undefined, filename: "", mediaType: "" });
const send = (value) => ({ tenant: "", configuration: undefined, metadata: undefined, message: {
  messageId: `js-art-${++n}`, contextId: "", taskId: "", role: Role.ROLE_USER, parts: [text(value)],
  metadata: undefined, extensions: [], referenceTaskIds: [] } });

const resolver = new DefaultAgentCardResolver({ fetchImpl });
const card = await resolver.resolve(`${base}/a2a/${agentName}/`);
const iface = card.supportedInterfaces.find((i) => i.protocolVersion === "1.0");
const factory = new ClientFactory(ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
  transports: [new JsonRpcTransportFactory({ fetchImpl })], cardResolver: resolver,
}));
const client = await factory.createFromAgentCard({ ...card, supportedInterfaces: [iface] });

const big = "0123456789abcdef".repeat(5000);
const msg = `/call save_artifact {"name": "small.txt", "content": "hello"}\n/call save_artifact {"name": "big.csv", "content": "${big}"}`;

// check sees the two artifacts beside the output: small.txt raw, big.csv a
// URL that answers the bytes to the token.
async function checkArtifacts(where, arts) {
  const byName = Object.fromEntries(arts.map((a) => [a.name, a]));
  check(arts.length === 3 && byName.output && byName["small.txt"] && byName["big.csv"], `${where}: output, small.txt, big.csv`, arts.map((a) => a.name));
  const small = byName["small.txt"].parts[0];
  check(small.content?.$case === "raw" && new TextDecoder().decode(small.content.value) === "hello" && small.filename === "small.txt",
    `${where}: small.txt raw`, small);
  const bigPart = byName["big.csv"].parts[0];
  check(bigPart.content?.$case === "url" && bigPart.filename === "big.csv" && bigPart.mediaType.startsWith("text/csv"), `${where}: big.csv a URL`, bigPart);
  const resp = await fetch(bigPart.content.value, { headers: auth });
  check(resp.status === 200 && (await resp.text()) === big, `${where}: big.csv downloads`, resp.status);
}

const task = await client.sendMessage(send(msg));
check(task.status.state === TaskState.TASK_STATE_COMPLETED, "send", task.status);
await checkArtifacts("sendMessage", task.artifacts);
await checkArtifacts("getTask", (await client.getTask({ tenant: "", id: task.id, historyLength: undefined })).artifacts);
const list = await client.listTasks({ tenant: "", contextId: "", status: TaskState.TASK_STATE_UNSPECIFIED, pageToken: "", includeArtifacts: true });
await checkArtifacts("listTasks includeArtifacts", list.tasks.find((t) => t.id === task.id).artifacts);

const events = [];
for await (const ev of client.sendMessageStream(send(`/call save_artifact {"name": "s.md", "content": "# s"}`))) events.push(ev);
const updates = events.filter((e) => e.payload?.$case === "artifactUpdate").map((e) => e.payload.value.artifact);
check(updates.length >= 2 && updates[0].name === "s.md" && updates[0].parts[0].content?.$case === "url" && updates.at(-1).name === "output",
  "stream: an artifactUpdate for s.md, then the output", updates.map((a) => a.name));
console.log("ALL OK artifacts");
