// The official A2A JavaScript SDK's client answering a Hitch agent's
// questions (docs/api.md, "Pauses for input"). Run by internal/a2a's
// TestJSClientInputs:
//
//   node inputs.mjs BASE_URL AGENT USER PROTOCOL   (PROTOCOL: 1.0 or 0.3)
//
// The agent must have the builtin ask_user and the local model. Prints one
// line per step, and "ANSWERED HOW TOOL_CALL_ID" for each question it
// answered (HOW: text or data), for the test to find the answer at the
// model; exits 1 on the first failed check.
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

function check(cond, what, got) {
  if (!cond) {
    console.error(`FAIL ${what}: ${JSON.stringify(got, (k, v) => (typeof v === "bigint" ? String(v) : v))}`);
    process.exit(1);
  }
  console.log(`ok ${what}`);
}

let n = 0;
const message = (parts, taskId = "") => ({
  messageId: `js-inputs-${protocol}-${++n}`, contextId: "", taskId, role: Role.ROLE_USER, parts,
  metadata: undefined, extensions: [], referenceTaskIds: [],
});
const text = (value) => ({ content: { $case: "text", value }, metadata: undefined, filename: "", mediaType: "" });
const data = (value) => ({ content: { $case: "data", value }, metadata: undefined, filename: "", mediaType: "application/json" });
const send = (msg) => ({ tenant: "", message: msg, configuration: undefined, metadata: undefined });
// canonical is JSON with its objects' keys sorted, to compare values.
const canonical = (v) => JSON.stringify(v, (k, x) =>
  x && typeof x === "object" && !Array.isArray(x) ? Object.fromEntries(Object.entries(x).sort(([a], [b]) => (a < b ? -1 : 1))) : x);
const outputOf = (task) => task.artifacts.flatMap((a) => a.parts).map((p) => p.content?.value ?? "").join("");
// The input-required status message: its text parts joined, its data part.
const statusOf = (task) => {
  const parts = task.status.message?.parts ?? [];
  return {
    said: parts.filter((p) => p.content?.$case === "text").map((p) => p.content.value).join("\n"),
    data: parts.find((p) => p.content?.$case === "data")?.content.value,
  };
};

const resolver = new DefaultAgentCardResolver({ fetchImpl, legacyCompat: { enabled: true } });
const card = await resolver.resolve(`${base}/a2a/${agentName}/`);
const iface = card.supportedInterfaces.find((i) => i.protocolVersion === protocol);
check(iface !== undefined, `interface ${protocol} in the card`, card.supportedInterfaces);
const factory = new ClientFactory(ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
  transports: [new JsonRpcTransportFactory({ fetchImpl, legacyCompat: { enabled: true } })],
  cardResolver: resolver,
}));
const client = await factory.createFromAgentCard({ ...card, supportedInterfaces: [iface] });

// A round holding one question: the question in a text part, the pending
// input in the data part; a plain text reply answers it.
const name = "What should the report be called?";
let task = await client.sendMessage(send(message([text(`/call ask_user {"question": "${name}"}`)])));
check(task.status.state === TaskState.TASK_STATE_INPUT_REQUIRED, "a question: input-required", task.status.state);
let { said, data: pending } = statusOf(task);
check(said.split("\n")[0] === name && said.includes("reply with the answer as text"), "the question in a text part", said);
check(pending.pending_approvals.length === 0 && pending.pending_inputs.length === 1 && pending.round === 1,
  "one pending input in the data part, round 1", pending);
const q = pending.pending_inputs[0];
check(q.kind === "question" && q.name === "ask_user" && q.question === name && q.input.question === name &&
  /^tooluse_[0-9a-f]{20}$/.test(q.tool_call_id) && q.round === 1 && q.expires_at !== undefined, "the pending input", q);
let got = await client.getTask({ tenant: "", id: task.id, historyLength: undefined });
check(got.status.state === TaskState.TASK_STATE_INPUT_REQUIRED && statusOf(got).data.pending_inputs[0].tool_call_id === q.tool_call_id,
  "getTask: the same question", statusOf(got).data);
let done = await client.sendMessage(send(message([text("Q3 numbers")], task.id)));
console.log(`ANSWERED text ${q.tool_call_id}`);
check(done.id === task.id && done.status.state === TaskState.TASK_STATE_COMPLETED, "the text reply: completed", done.status.state);
check(outputOf(done) === "results: ask_user success: Q3 numbers", "the answer as the tool's result", outputOf(done));

// A question with a schema, answered by a data part holding the decisions;
// a decision for a call that is not pending is invalid params and changes
// nothing.
const how = "How should it be printed?";
const schema = {
  type: "object", required: ["copies"],
  properties: { copies: { type: "integer", minimum: 1 }, duplex: { type: "boolean" } },
};
task = await client.sendMessage(send(message([text(`/call ask_user ${JSON.stringify({ question: how, schema })}`)])));
check(task.status.state === TaskState.TASK_STATE_INPUT_REQUIRED, "a question with a schema: input-required", task.status.state);
({ said, data: pending } = statusOf(task));
const s = pending.pending_inputs[0];
check(said.split("\n")[0] === how && pending.pending_inputs.length === 1 && s.kind === "question" &&
  canonical(s.schema) === canonical(schema), "the question and its schema", pending);
let refused;
try {
  await client.sendMessage(send(message([data({ decisions: [{ tool_call_id: "tooluse_00000000000000000000", action: "answer", result: { copies: 3 } }] })], task.id)));
} catch (e) {
  refused = e;
}
const codeOf = (e) => (e?.data ?? []).map((d) => d.metadata?.code).find((c) => c !== undefined);
check(refused?.envelopeCode === -32602 && codeOf(refused) === "invalid_decisions", "a decision for another call: -32602 invalid_decisions",
  { code: refused?.envelopeCode, hitch: codeOf(refused), message: refused?.message });
try {
  refused = undefined;
  await client.sendMessage(send(message([data({ decisions: [{ tool_call_id: s.tool_call_id, action: "answer", result: { copies: 0 } }] })], task.id)));
} catch (e) {
  refused = e;
}
check(refused?.envelopeCode === -32602 && codeOf(refused) === "invalid_input", "an answer against the schema: -32602 invalid_input",
  { code: refused?.envelopeCode, hitch: codeOf(refused), message: refused?.message });
got = await client.getTask({ tenant: "", id: task.id, historyLength: undefined });
check(got.status.state === TaskState.TASK_STATE_INPUT_REQUIRED && statusOf(got).data.pending_inputs[0].tool_call_id === s.tool_call_id,
  "still input-required after the refusals", got.status.state);
done = await client.sendMessage(send(message([data({ decisions: [{ tool_call_id: s.tool_call_id, action: "answer", result: { copies: 3, duplex: true } }] })], task.id)));
console.log(`ANSWERED data ${s.tool_call_id}`);
check(done.id === task.id && done.status.state === TaskState.TASK_STATE_COMPLETED, "the data part's decision: completed", done.status.state);
check(outputOf(done) === 'results: ask_user success: {"copies":3,"duplex":true}', "the answer as the tool's JSON result", outputOf(done));

console.log(`ALL OK inputs ${protocol}`);
