// A Lambda durable function that asks a Hitch agent to do a task whose tool
// needs a person's approval, and waits for the agent without running:
// waitForCallback hands Hitch a callback id, Hitch's notifier answers it
// (SendDurableExecutionCallbackSuccess / Failure, heartbeats while the agent
// waits on the person), and the execution resumes with the agent's
// RequestResult.
import { createHash } from "node:crypto";
import { CallbackError, withDurableExecution, type DurableContext } from "@aws/durable-execution-sdk-js";
import { InvokeCommand, LambdaClient } from "@aws-sdk/client-lambda";

// What the execution is started with.
export interface ApprovalEvent {
  /** The Hitch agent (default "assistant"). */
  agent?: string;
  /** Whose task it is: the owner Hitch records (direct payloads are trusted callers). */
  user_id: string;
  /** The task, as the agent's first message. */
  message: string;
  /** A session to continue (default: a new one). */
  session_id?: string;
}

// Hitch's RequestResult: the fields this function reads (docs/api.md).
export interface RequestResult {
  task_id: string;
  request_id: string;
  status: "Completed" | "Paused" | "Failed" | "Canceled" | "Running";
  output?: string;
  error?: { code: string; message: string };
}

// What the execution returns: which branch it took and why.
export interface Outcome {
  branch: "completed" | "stopped";
  status: RequestResult["status"];
  task_id: string;
  request_id: string;
  output?: string;
  error?: { code: string; message: string };
}

// The invoke function, by name or ARN (HITCH_INVOKE_FUNCTION). The client
// reads AWS_ENDPOINT_URL_LAMBDA like any AWS SDK: locally it points at
// `hitch serve --lambda-addr`.
const hitch = new LambdaClient({});
const invokeFunction = () => process.env.HITCH_INVOKE_FUNCTION ?? "hitch-invoke";

export const handler = withDurableExecution(async (event: ApprovalEvent, context: DurableContext): Promise<Outcome> => {
  let result: RequestResult;
  try {
    const raw = await context.waitForCallback<string>(
      "hitch-agent",
      async (callbackId) => {
        // The submitter may run again (a retried step): the idempotency key
        // makes Hitch answer a retry with the request it already started.
        const key = "durable-" + createHash("sha256").update(callbackId).digest("hex").slice(0, 48);
        const payload = {
          op: "invoke",
          agent: event.agent ?? "assistant",
          user_id: event.user_id,
          session_id: event.session_id,
          items: [{ content_type: "text", content: event.message }],
          idempotency_key: key,
          callback_id: callbackId,
        };
        const out = await hitch.send(new InvokeCommand({ FunctionName: invokeFunction(), Payload: JSON.stringify(payload) }));
        const body = new TextDecoder().decode(out.Payload);
        if (out.FunctionError) {
          // Hitch refused the payload ({errorType: "Hitch.<code>", errorMessage}).
          throw new Error(`Hitch refused the invoke: ${body}`);
        }
        context.logger.info(`Hitch started request ${JSON.parse(body).request_id}; waiting for its end`);
      },
      // An approval may take days. Hitch heartbeats on every state change of
      // the request (the pause, the resume), not on a clock: keep
      // heartbeatTimeout above the agent's approval_ttl (1 h for assistant),
      // after which the pause expires and the request ends.
      { timeout: { days: 7 }, heartbeatTimeout: { hours: 2 } },
    );
    result = JSON.parse(raw) as RequestResult;
  } catch (err) {
    // Failed and Canceled requests arrive as the callback's failure: its
    // errorData is the RequestResult, its type Hitch.<code>.
    if (err instanceof CallbackError && err.errorData) {
      result = JSON.parse(err.errorData) as RequestResult;
    } else {
      throw err;
    }
  }
  const outcome: Outcome = {
    branch: result.status === "Completed" ? "completed" : "stopped",
    status: result.status,
    task_id: result.task_id,
    request_id: result.request_id,
  };
  if (result.output !== undefined) outcome.output = result.output;
  if (result.error) outcome.error = result.error;
  return outcome;
});
