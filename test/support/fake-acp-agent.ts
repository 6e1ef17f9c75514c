// A scripted ACP agent written with the official SDK (agent side), for the acp backend's tests.
// Run with node:
//
//   node fake-acp-agent.js      FAKE_ACP_SCRIPT=script.json FAKE_ACP_LOG=log.jsonl
//
// The script (FakeAcpScript) picks each prompt's steps by the prompt's text, so it works across
// processes (a crash, a restart). What the agent received is appended to FAKE_ACP_LOG.
import fs from "node:fs";
import { randomUUID } from "node:crypto";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";

export type FakeAcpStep =
  | { message: string[] }
  | { thought: string[] }
  /** An execute tool call; with `permission`, asks first; with `terminal`, runs in a client terminal. */
  | { command: string; output?: string; exitCode?: number; permission?: boolean; terminal?: boolean }
  /** An edit tool call: asks (with `permission`), writes through fs/write_text_file, reports the diff. */
  | { edit: { path: string; oldText: string | null; newText: string }; permission?: boolean }
  /** Reads a file through fs/read_text_file and says what it read (or the error). */
  | { read: string }
  /** An MCP-style tool call with a text result. */
  | { tool: { title: string; input: unknown; result: string } }
  | { plan: Array<{ content: string; status: "pending" | "in_progress" | "completed" }> }
  /** usage_update with the session's cumulative cost, and the prompt answer's token usage. */
  | { usage: { input: number; output: number; costUsd?: number } }
  /** Waits for session/cancel, then answers the prompt as cancelled (unless ignoreCancel). */
  | { waitForCancel: true; ignoreCancel?: boolean }
  /** Writes to stderr and exits with the code, mid-prompt. */
  | { crash: { code: number; stderr: string } };

export interface FakeAcpScript {
  turns: Record<string, FakeAcpStep[]>;
  /** Whether initialize offers loadSession (default true), and whether session/load then succeeds. */
  loadSession?: boolean;
  load?: "accept" | "refuse";
  /** Answer initialize with a protocol error. */
  failInitialize?: boolean;
}

export type FakeAcpLogEntry = { event: "start"; pid: number } | { event: "received"; method: string; params: unknown };

const script: FakeAcpScript = process.env.FAKE_ACP_SCRIPT
  ? (JSON.parse(fs.readFileSync(process.env.FAKE_ACP_SCRIPT, "utf8")) as FakeAcpScript)
  : { turns: {} };
const log = (entry: FakeAcpLogEntry): void => {
  if (process.env.FAKE_ACP_LOG) fs.appendFileSync(process.env.FAKE_ACP_LOG, JSON.stringify(entry) + "\n");
};
log({ event: "start", pid: process.pid });

const cancelled = new Map<string, () => void>();
let usage: { inputTokens: number; outputTokens: number; totalTokens: number } | undefined;
let calls = 0;

const app = acp
  .agent({ name: "fake-acp-agent" })
  .onRequest(acp.methods.agent.initialize, ({ params }) => {
    log({ event: "received", method: "initialize", params });
    if (script.failInitialize) throw new acp.RequestError(-32603, "this agent is broken on purpose");
    return {
      protocolVersion: acp.PROTOCOL_VERSION,
      agentCapabilities: { loadSession: script.loadSession ?? true, promptCapabilities: { image: true } },
      agentInfo: { name: "fake-acp-agent", version: "9.9.9" },
    };
  })
  .onRequest(acp.methods.agent.session.new, ({ params }) => {
    log({ event: "received", method: "session/new", params });
    return { sessionId: `sess_${randomUUID()}` };
  })
  .onRequest(acp.methods.agent.session.load, async ({ params, client }) => {
    log({ event: "received", method: "session/load", params });
    if (script.load === "refuse") throw acp.RequestError.resourceNotFound(params.sessionId);
    // History is replayed as updates, as agents do; the client must not record it again.
    await client.notify(acp.methods.client.session.update, {
      sessionId: params.sessionId,
      update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text: "replayed history" } },
    });
    return {};
  })
  .onNotification(acp.methods.agent.session.cancel, ({ params }) => {
    log({ event: "received", method: "session/cancel", params });
    cancelled.get(params.sessionId)?.();
  })
  .onRequest(acp.methods.agent.session.prompt, async ({ params, client }) => {
    log({ event: "received", method: "session/prompt", params });
    const text = params.prompt.map((b) => (b.type === "text" ? b.text : "")).join("");
    const steps = script.turns[text] ?? [{ message: ["ok"] }];
    const { sessionId } = params;
    const update = (u: acp.SessionUpdate): Promise<void> => client.notify(acp.methods.client.session.update, { sessionId, update: u });
    usage = undefined;
    for (const step of steps) {
      if ("message" in step)
        for (const t of step.message) await update({ sessionUpdate: "agent_message_chunk", content: { type: "text", text: t } });
      else if ("thought" in step)
        for (const t of step.thought) await update({ sessionUpdate: "agent_thought_chunk", content: { type: "text", text: t } });
      else if ("command" in step) await runCommand(client, sessionId, update, step);
      else if ("edit" in step) await edit(client, sessionId, update, step);
      else if ("read" in step) {
        const said = await client.request(acp.methods.client.fs.readTextFile, { sessionId, path: step.read }).then(
          (r) => `read: ${r.content}`,
          (e: unknown) => `read failed: ${(e as Error).message}`,
        );
        await update({ sessionUpdate: "agent_message_chunk", content: { type: "text", text: said } });
      } else if ("tool" in step) {
        const toolCallId = `call_${++calls}`;
        await update({
          sessionUpdate: "tool_call",
          toolCallId,
          title: step.tool.title,
          kind: "other",
          status: "in_progress",
          rawInput: step.tool.input,
        });
        await update({
          sessionUpdate: "tool_call_update",
          toolCallId,
          status: "completed",
          content: [{ type: "content", content: { type: "text", text: step.tool.result } }],
        });
      } else if ("plan" in step)
        await update({ sessionUpdate: "plan", entries: step.plan.map((e) => ({ ...e, priority: "medium" as const })) });
      else if ("usage" in step) {
        usage = { inputTokens: step.usage.input, outputTokens: step.usage.output, totalTokens: step.usage.input + step.usage.output };
        await update({
          sessionUpdate: "usage_update",
          used: usage.totalTokens,
          size: 200_000,
          ...(step.usage.costUsd !== undefined ? { cost: { amount: step.usage.costUsd, currency: "USD" } } : {}),
        });
      } else if ("waitForCancel" in step) {
        await new Promise<void>((resolve) => cancelled.set(sessionId, resolve));
        if (step.ignoreCancel) await new Promise(() => {});
        return { stopReason: "cancelled" };
      } else if ("crash" in step) {
        process.stderr.write(step.crash.stderr);
        process.exit(step.crash.code);
      }
    }
    return { stopReason: "end_turn", ...(usage ? { usage } : {}) };
  });

async function permit(client: acp.AgentContext, sessionId: string, toolCall: acp.ToolCallUpdate): Promise<boolean> {
  const response = await client.request(acp.methods.client.session.requestPermission, {
    sessionId,
    toolCall,
    options: [
      { optionId: "yes", name: "Allow", kind: "allow_once" },
      { optionId: "always", name: "Always allow", kind: "allow_always" },
      { optionId: "no", name: "Reject", kind: "reject_once" },
    ],
  });
  return response.outcome.outcome === "selected" && response.outcome.optionId !== "no";
}

async function runCommand(
  client: acp.AgentContext,
  sessionId: string,
  update: (u: acp.SessionUpdate) => Promise<void>,
  step: Extract<FakeAcpStep, { command: string }>,
): Promise<void> {
  const toolCallId = `call_${++calls}`;
  const rawInput = { command: step.command };
  await update({ sessionUpdate: "tool_call", toolCallId, title: `\`${step.command}\``, kind: "execute", status: "pending", rawInput });
  if (step.permission && !(await permit(client, sessionId, { toolCallId, kind: "execute", title: step.command, rawInput }))) {
    await update({ sessionUpdate: "tool_call_update", toolCallId, status: "failed", rawOutput: { declined: true } });
    return;
  }
  if (step.terminal) {
    const { terminalId } = await client.request(acp.methods.client.terminal.create, {
      sessionId,
      command: "bash",
      args: ["-c", step.command],
    });
    await update({ sessionUpdate: "tool_call_update", toolCallId, status: "in_progress", content: [{ type: "terminal", terminalId }] });
    const exit = await client.request(acp.methods.client.terminal.waitForExit, { sessionId, terminalId });
    await client.request(acp.methods.client.terminal.release, { sessionId, terminalId });
    await update({ sessionUpdate: "tool_call_update", toolCallId, status: "completed", rawOutput: { exitCode: exit.exitCode } });
    return;
  }
  await update({
    sessionUpdate: "tool_call_update",
    toolCallId,
    status: "completed",
    content: [{ type: "content", content: { type: "text", text: "```\n" + (step.output ?? "") + "```" } }],
    rawOutput: { exitCode: step.exitCode ?? 0 },
  });
}

async function edit(
  client: acp.AgentContext,
  sessionId: string,
  update: (u: acp.SessionUpdate) => Promise<void>,
  step: Extract<FakeAcpStep, { edit: unknown }>,
): Promise<void> {
  const toolCallId = `call_${++calls}`;
  const diff: acp.ToolCallContent = { type: "diff", path: step.edit.path, oldText: step.edit.oldText, newText: step.edit.newText };
  await update({
    sessionUpdate: "tool_call",
    toolCallId,
    title: `Edit ${step.edit.path}`,
    kind: "edit",
    status: "pending",
    locations: [{ path: step.edit.path }],
  });
  if (
    step.permission &&
    !(await permit(client, sessionId, { toolCallId, kind: "edit", content: [diff], locations: [{ path: step.edit.path }] }))
  ) {
    await update({ sessionUpdate: "tool_call_update", toolCallId, status: "failed" });
    return;
  }
  try {
    await client.request(acp.methods.client.fs.writeTextFile, { sessionId, path: step.edit.path, content: step.edit.newText });
  } catch (error) {
    await update({
      sessionUpdate: "tool_call_update",
      toolCallId,
      status: "failed",
      content: [{ type: "content", content: { type: "text", text: `write failed: ${(error as Error).message}` } }],
    });
    return;
  }
  await update({ sessionUpdate: "tool_call_update", toolCallId, status: "completed", content: [diff] });
}

const stream = acp.ndJsonStream(
  Writable.toWeb(process.stdout) as WritableStream<Uint8Array>,
  Readable.toWeb(process.stdin) as ReadableStream<Uint8Array>,
);
const connection = app.connect(stream);
await connection.closed;
process.exit(0);
