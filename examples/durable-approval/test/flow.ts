// The example's flow on one machine, with software no one at Hitch wrote:
// the durable SDK's LocalDurableTestRunner runs src/handler.ts; its
// waitForCallback submitter starts a Hitch agent through `hitch serve
// --lambda-addr` (AWS_ENDPOINT_URL_LAMBDA); Hitch's dispatcher answers the
// callback through the Lambda API's callback routes, which a small bridge
// here serves to the runner; a person approves (or rejects) the pending call
// over Hitch's HTTP API.
//
//   HITCH_URL                 Hitch's HTTP API        (default http://127.0.0.1:8080)
//   AWS_ENDPOINT_URL_LAMBDA   hitch serve --lambda-addr (set by `make example-durable`)
//   HITCH_CALLBACK_BRIDGE     where the bridge listens, the address `hitch serve`
//                             has as its AWS_ENDPOINT_URL_LAMBDA (default 127.0.0.1:9002)
//   HITCH_SANDBOX             the assistant's sandbox directory (default ../../agents/sandbox,
//                             as `make run` serves it)
//
// It prints one JSON line per scenario and exits non-zero when one does not
// end as it should.
import { existsSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import http from "node:http";
import path from "node:path";
import { LocalDurableTestRunner, WaitingOperationStatus, type DurableOperation } from "@aws/durable-execution-sdk-js-testing";
import { handler, type Outcome } from "../src/handler.ts";

const hitchURL = process.env.HITCH_URL ?? "http://127.0.0.1:8080";
const [bridgeHost, bridgePort] = (process.env.HITCH_CALLBACK_BRIDGE ?? "127.0.0.1:9002").split(":");
const sandbox = process.env.HITCH_SANDBOX ?? path.join(import.meta.dirname, "..", "..", "..", "agents", "sandbox");
const user = "durable-example";

// The callback operation of the execution running now, and what reached it.
let callback: DurableOperation | undefined;
let calls: { op: string; at: number }[] = [];

// The bridge: the Lambda API's three callback routes, answered by the local
// runner. An id that is not the running execution's callback is unknown
// (ResourceNotFoundException), as the Lambda API answers.
const bridge = http.createServer(async (req, res) => {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  const body = Buffer.concat(chunks).toString("utf8");
  const m = /^\/2025-12-01\/durable-execution-callbacks\/([^/]+)\/(succeed|fail|heartbeat)$/.exec(req.url ?? "");
  const refuse = (status: number, type: string, message: string) => {
    res.writeHead(status, { "content-type": "application/json", "x-amzn-errortype": type });
    res.end(JSON.stringify({ Type: "User", message }));
  };
  if (req.method !== "POST" || !m) return refuse(404, "UnknownOperationException", `unknown operation ${req.method} ${req.url}`);
  const id = decodeURIComponent(m[1]);
  const op = m[2];
  if (!callback || callback.getCallbackDetails()?.callbackId !== id) {
    return refuse(404, "ResourceNotFoundException", `callback ${id} not found`);
  }
  calls.push({ op, at: performance.now() });
  try {
    if (op === "succeed") await callback.sendCallbackSuccess(body);
    else if (op === "fail") await callback.sendCallbackFailure(JSON.parse(body));
    else await callback.sendCallbackHeartbeat();
  } catch (err) {
    return refuse(400, "CallbackTimeoutException", String(err));
  }
  res.writeHead(200, { "content-type": "application/json" });
  res.end("{}");
});

async function hitchAPI(method: string, path: string, body?: unknown): Promise<any> {
  const res = await fetch(hitchURL + path, {
    method,
    headers: { authorization: `Bearer ${user}`, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text}`);
  return JSON.parse(text);
}

// The paused task the execution started: the newest paused task of the user.
async function pausedTask(): Promise<{ task_id: string; request_id: string; round: number }> {
  for (let i = 0; i < 200; i++) {
    const list = await hitchAPI("GET", "/agents/assistant/tasks?status=Paused&limit=1");
    const t = list.tasks?.[0];
    if (t) {
      const task = await hitchAPI("GET", `/agents/assistant/tasks/${t.task_id}`);
      const r = task.requests.at(-1);
      return { task_id: t.task_id, request_id: r.request_id, round: r.round };
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error("no paused task appeared");
}

type Decide = (t: { task_id: string; request_id: string; round: number }) => Promise<unknown>;

async function scenario(name: string, file: string, decide: Decide, want: (o: Outcome) => boolean, deleted: boolean) {
  mkdirSync(sandbox, { recursive: true });
  writeFileSync(path.join(sandbox, file), "old lines\n");
  const runner = new LocalDurableTestRunner<Outcome>({ handlerFunction: handler });
  calls = [];
  callback = runner.getOperation("hitch-agent");
  const running = runner.run({ payload: { user_id: user, message: `/call delete_file {"path": "${file}"}` } });
  await callback.waitForData(WaitingOperationStatus.SUBMITTED);
  const task = await pausedTask();
  const sent = performance.now();
  await decide(task);
  const answered = performance.now();
  await callback.waitForData(WaitingOperationStatus.COMPLETED);
  const resumed = performance.now();
  const execution = await running;
  const done = performance.now();
  callback = undefined;
  const succeeded = execution.getStatus() === "SUCCEEDED";
  const result = succeeded ? execution.getResult() : undefined;
  const end = calls.find((c) => c.op !== "heartbeat");
  const line = {
    scenario: name,
    status: execution.getStatus(),
    result,
    error: succeeded ? undefined : execution.getError(),
    callbacks: calls.map((c) => c.op),
    // The commit lies between `sent` and `answered` (the HTTP answer follows it).
    ms: {
      decision_http: +(answered - sent).toFixed(1),
      answer_to_callback: end ? +(end.at - answered).toFixed(1) : null,
      answer_to_resumed: +(resumed - answered).toFixed(1),
      answer_to_execution_end: +(done - answered).toFixed(1),
    },
  };
  console.log(JSON.stringify(line));
  if (existsSync(path.join(sandbox, file)) === deleted) {
    throw new Error(`scenario ${name}: ${file} ${deleted ? "is still there" : "was deleted"}`);
  }
  rmSync(path.join(sandbox, file), { force: true });
  if (!succeeded || !result || !want(result)) {
    throw new Error(`scenario ${name} did not end as expected`);
  }
  return line;
}

async function main() {
  await new Promise<void>((ok, fail) => bridge.listen(Number(bridgePort), bridgeHost, ok).once("error", fail));
  await LocalDurableTestRunner.setupTestEnvironment({ skipTime: false });
  try {
    await hitchAPI("GET", "/agents"); // Hitch is up
    // Approved: the deletion runs, the agent completes, the execution takes
    // the success branch with the agent's output.
    await scenario(
      "approve",
      "old.log",
      (t) => hitchAPI("POST", `/agents/assistant/tasks/${t.task_id}/requests/${t.request_id}/resume`, { action: "approve", round: t.round }),
      (o) => o.branch === "completed" && o.status === "Completed" && /delete_file success/.test(o.output ?? ""),
      true,
    );
    // The call rejected with a reason: the agent hears it and answers; the
    // request still completes (a rejection is a tool result, not a failure).
    await scenario(
      "reject",
      "keep.log",
      (t) => hitchAPI("POST", `/agents/assistant/tasks/${t.task_id}/requests/${t.request_id}/resume`, { action: "reject", round: t.round, reason: "keep it" }),
      (o) => o.branch === "completed" && /keep it/.test(o.output ?? ""),
      false,
    );
    // The task rejected as a whole (canceled): the callback fails with
    // Hitch.canceled and the execution takes the failure branch.
    await scenario(
      "cancel",
      "other.log",
      (t) => hitchAPI("POST", `/agents/assistant/tasks/${t.task_id}/cancel`, { reason: "not today" }),
      (o) => o.branch === "stopped" && o.status === "Canceled",
      false,
    );
  } finally {
    await LocalDurableTestRunner.teardownTestEnvironment();
    bridge.close();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
