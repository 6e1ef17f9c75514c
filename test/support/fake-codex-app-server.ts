// A scripted stand-in for `codex app-server` (its v2 JSON-RPC, JSON lines on stdio, without the
// "jsonrpc" member, as codex writes them). Run with node:
//
//   node fake-codex-app-server.js [app-server]      FAKE_CODEX_SCRIPT=script.json FAKE_CODEX_LOG=log.jsonl
//   node fake-codex-app-server.js --version
//
// The script (FakeCodexScript) picks each turn's steps by the turn's input text, so it works
// across processes (a crash, a restart). Everything received, and the process's start, is
// appended to FAKE_CODEX_LOG as one JSON object per line (FakeCodexLogEntry).
import { randomUUID } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import readline from "node:readline";

export type FakeCodexStep =
  /** An agentMessage item streamed in these deltas. */
  | { message: string[] }
  /** A reasoning item whose summary is streamed in these deltas. */
  | { reasoning: string[] }
  /** A commandExecution item; with `approval`, asks first and honours the decision. */
  | { command: string; output: string; exitCode?: number; approval?: boolean }
  /** A fileChange item (path relative to the cwd); with `approval`, asks first. Accepted changes are written. */
  | { fileChange: { path: string; kind: "add" | "update"; content: string; diff: string }; approval?: boolean }
  /** thread/tokenUsage/updated for one model call (totals accumulate per process). */
  | { usage: { input: number; output: number; cached?: number; reasoning?: number } }
  | { plan: Array<{ step: string; status: "pending" | "inProgress" | "completed" }>; explanation?: string }
  /** Waits for turn/interrupt, then ends the turn as interrupted (unless ignoreInterrupt: then never ends). */
  | { waitForInterrupt: true; ignoreInterrupt?: boolean }
  /** Writes to stderr and exits with the code, mid-turn. */
  | { crash: { code: number; stderr: string } }
  /** Ends the turn as failed with this message. */
  | { fail: string };

export interface FakeCodexScript {
  /** Turn steps by the turn's input text; a turn whose text is not listed answers "ok". */
  turns: Record<string, FakeCodexStep[]>;
  /** "refuse": thread/resume answers with an error (the thread is unknown). Default: accept. */
  resume?: "accept" | "refuse";
}

export type FakeCodexLogEntry =
  | { event: "start"; pid: number; argv: string[]; cwd: string }
  /** The id of a thread this fake created (thread/start). */
  | { event: "threadStarted"; threadId: string }
  | { event: "received"; message: { id?: number | string; method?: string; params?: any; result?: any; error?: any } };

type Json = Record<string, any>;

if (process.argv.includes("--version")) {
  process.stdout.write("codex-cli 0.0.0-fake\n");
  process.exit(0);
}

const script: FakeCodexScript = process.env.FAKE_CODEX_SCRIPT
  ? (JSON.parse(fs.readFileSync(process.env.FAKE_CODEX_SCRIPT, "utf8")) as FakeCodexScript)
  : { turns: {} };
const logFile = process.env.FAKE_CODEX_LOG;
const log = (entry: FakeCodexLogEntry): void => {
  if (logFile) fs.appendFileSync(logFile, JSON.stringify(entry) + "\n");
};
log({ event: "start", pid: process.pid, argv: process.argv.slice(2), cwd: process.cwd() });

const send = (message: Json): void => void process.stdout.write(JSON.stringify(message) + "\n");
const notify = (method: string, params: Json): void => send({ method, params });

let nextRequestId = 0;
const pendingRequests = new Map<number, (message: Json) => void>();
/** A request to the client; resolves with its response message. */
function request(method: string, params: Json): Promise<Json> {
  const id = nextRequestId++;
  send({ method, id, params });
  return new Promise((resolve) => pendingRequests.set(id, resolve));
}

let threadId: string | undefined;
let cwd = process.cwd();
const total = { totalTokens: 0, inputTokens: 0, cachedInputTokens: 0, cacheWriteInputTokens: 0, outputTokens: 0, reasoningOutputTokens: 0 };
let interruptWaiter: (() => void) | undefined;
let interruptRequested = false;

const input = readline.createInterface({ input: process.stdin });
input.on("line", (line) => {
  if (!line.trim()) return;
  const message = JSON.parse(line) as Json;
  log({ event: "received", message });
  if (message.method === undefined) {
    const resolve = pendingRequests.get(message.id as number);
    pendingRequests.delete(message.id as number);
    resolve?.(message);
    return;
  }
  void handle(message).catch((error: unknown) => {
    process.stderr.write(`fake codex: ${String(error)}\n`);
    if (message.id !== undefined) send({ id: message.id, error: { code: -32603, message: String(error) } });
  });
});
input.on("close", () => process.exit(0));

async function handle(message: Json): Promise<void> {
  const { id, method, params = {} } = message as { id?: number; method: string; params: Json };
  const reply = (result: Json): void => send({ id, result });
  switch (method) {
    case "initialize":
      return reply({ userAgent: "fake-codex/0.0.0", codexHome: "/tmp/fake-codex-home", platformFamily: "unix", platformOs: "linux" });
    case "initialized":
      return;
    case "thread/start":
      threadId = randomUUID();
      log({ event: "threadStarted", threadId });
      cwd = params.cwd ?? cwd;
      return reply({
        thread: thread(threadId),
        model: params.model ?? "fake-codex-model",
        approvalPolicy: params.approvalPolicy,
        sandbox: { type: "dangerFullAccess" },
      });
    case "thread/resume":
      if (script.resume === "refuse")
        return send({ id, error: { code: -32600, message: `no rollout found for thread id ${params.threadId}` } });
      threadId = params.threadId as string;
      cwd = params.cwd ?? cwd;
      return reply({
        thread: thread(threadId),
        model: "fake-codex-model",
        approvalPolicy: params.approvalPolicy,
        sandbox: { type: "dangerFullAccess" },
      });
    case "turn/start": {
      const turnId = randomUUID();
      reply({ turn: { id: turnId, items: [], status: "inProgress", error: null } });
      const text = ((params.input ?? []) as Json[])
        .filter((p) => p.type === "text")
        .map((p) => p.text)
        .join("\n");
      return runTurn(turnId, script.turns[text] ?? [{ message: ["ok"] }]);
    }
    case "turn/interrupt":
      interruptRequested = true;
      reply({});
      interruptWaiter?.();
      return;
    default:
      return send({ id, error: { code: -32601, message: `unknown method ${method}` } });
  }
}

function thread(id: string): Json {
  return {
    id,
    sessionId: id,
    preview: "",
    ephemeral: false,
    modelProvider: "fake",
    model: "fake-codex-model",
    cwd,
    cliVersion: "0.0.0",
    status: { type: "idle" },
    turns: [],
  };
}

async function runTurn(turnId: string, steps: FakeCodexStep[]): Promise<void> {
  interruptRequested = false;
  const base = { threadId: threadId!, turnId };
  const end = (status: string, error: Json | null = null): void =>
    notify("turn/completed", {
      threadId,
      turn: { id: turnId, items: [], status, error, startedAt: null, completedAt: null, durationMs: null },
    });
  notify("turn/started", { threadId, turn: { id: turnId, items: [], status: "inProgress", error: null } });
  const userItem = { type: "userMessage", id: randomUUID(), clientId: null, content: [] };
  notify("item/started", { ...base, item: userItem, startedAtMs: Date.now() });
  notify("item/completed", { ...base, item: userItem, completedAtMs: Date.now() });

  for (const step of steps) {
    if ("message" in step) {
      const item = { type: "agentMessage", id: `msg_${randomUUID()}`, text: "", phase: null };
      notify("item/started", { ...base, item });
      for (const delta of step.message) notify("item/agentMessage/delta", { ...base, itemId: item.id, delta });
      notify("item/completed", { ...base, item: { ...item, text: step.message.join("") } });
    } else if ("reasoning" in step) {
      const item = { type: "reasoning", id: `rs_${randomUUID()}`, summary: [] as string[], content: [] };
      notify("item/started", { ...base, item });
      notify("item/reasoning/summaryPartAdded", { ...base, itemId: item.id, summaryIndex: 0 });
      for (const delta of step.reasoning) notify("item/reasoning/summaryTextDelta", { ...base, itemId: item.id, delta, summaryIndex: 0 });
      notify("item/completed", { ...base, item: { ...item, summary: [step.reasoning.join("")] } });
    } else if ("command" in step) {
      const item = {
        type: "commandExecution",
        id: `call_${randomUUID()}`,
        command: step.command,
        cwd,
        processId: null,
        source: "agent",
        status: "inProgress",
        commandActions: [],
        aggregatedOutput: null,
        exitCode: null,
        durationMs: null,
      };
      notify("item/started", { ...base, item });
      let decision = "accept";
      if (step.approval) {
        const response = await request("item/commandExecution/requestApproval", {
          kind: "command",
          ...base,
          itemId: item.id,
          startedAtMs: Date.now(),
          environmentId: "local",
          command: step.command,
          cwd,
          commandActions: [],
          availableDecisions: ["accept", "acceptForSession", "decline", "cancel"],
        });
        decision = (response.result?.decision as string) ?? "decline";
      }
      if (decision === "accept" || decision === "acceptForSession") {
        const half = Math.ceil(step.output.length / 2);
        for (const delta of [step.output.slice(0, half), step.output.slice(half)].filter(Boolean)) {
          notify("item/commandExecution/outputDelta", { ...base, itemId: item.id, delta });
        }
        notify("item/completed", {
          ...base,
          item: { ...item, status: "completed", aggregatedOutput: step.output, exitCode: step.exitCode ?? 0, durationMs: 5 },
        });
      } else {
        notify("item/completed", { ...base, item: { ...item, status: "declined" } });
        if (decision === "cancel") return end("interrupted");
      }
    } else if ("fileChange" in step) {
      const file = path.resolve(cwd, step.fileChange.path);
      const change = {
        path: file,
        kind: step.fileChange.kind === "add" ? { type: "add" } : { type: "update", move_path: null },
        diff: step.fileChange.diff,
      };
      const item = { type: "fileChange", id: `call_${randomUUID()}`, changes: [change], status: "inProgress" };
      notify("item/started", { ...base, item });
      let decision = "accept";
      if (step.approval) {
        const response = await request("item/fileChange/requestApproval", {
          ...base,
          itemId: item.id,
          startedAtMs: Date.now(),
          reason: null,
          grantRoot: null,
        });
        decision = (response.result?.decision as string) ?? "decline";
      }
      if (decision === "accept" || decision === "acceptForSession") {
        fs.writeFileSync(file, step.fileChange.content);
        notify("item/completed", { ...base, item: { ...item, status: "completed" } });
        notify("turn/diff/updated", {
          ...base,
          diff: `diff --git a/${step.fileChange.path} b/${step.fileChange.path}\n${step.fileChange.diff}`,
        });
      } else {
        notify("item/completed", { ...base, item: { ...item, status: "declined" } });
        if (decision === "cancel") return end("interrupted");
      }
    } else if ("usage" in step) {
      const last = {
        inputTokens: step.usage.input,
        cachedInputTokens: step.usage.cached ?? 0,
        cacheWriteInputTokens: 0,
        outputTokens: step.usage.output,
        reasoningOutputTokens: step.usage.reasoning ?? 0,
        totalTokens: step.usage.input + step.usage.output,
      };
      for (const key of Object.keys(total) as Array<keyof typeof total>) total[key] += last[key];
      notify("thread/tokenUsage/updated", { ...base, tokenUsage: { total: { ...total }, last, modelContextWindow: 200000 } });
    } else if ("plan" in step) {
      notify("turn/plan/updated", { ...base, explanation: step.explanation ?? null, plan: step.plan });
    } else if ("waitForInterrupt" in step) {
      if (!interruptRequested) await new Promise<void>((resolve) => (interruptWaiter = resolve));
      interruptWaiter = undefined;
      if (step.ignoreInterrupt) return new Promise<void>(() => {}); // never ends the turn
      return end("interrupted");
    } else if ("crash" in step) {
      process.stderr.write(step.crash.stderr);
      process.exit(step.crash.code);
    } else if ("fail" in step) {
      notify("error", { ...base, error: { message: step.fail, codexErrorInfo: null, additionalDetails: null }, willRetry: false });
      return end("failed", { message: step.fail, codexErrorInfo: null, additionalDetails: null });
    }
  }
  end("completed");
}
