// Benchmarks of the external-agent seam, with Switchyard itself (`switchyard acp`) as the ACP
// agent, so the same fake model stream can be run through the built-in backend and through
// the acp backend:
// - per-delta cost: the server's CPU per streamed delta on the acp backend over the built-in one;
// - first delta: thread/start → first delta through Switchyard, against the agent's own
//   spawn → first chunk when an ACP client drives it directly (the difference is Switchyard's).
import { spawn as spawnProcess } from "node:child_process";
import { performance } from "node:perf_hooks";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";
import { FakeModelServer } from "../test/support/fake-model-server.js";
import { modelEnv, text, threadStartParams } from "../test/support/harness.js";
import { CLI_PATH } from "../test/support/server-process.js";
import type { Message } from "../test/support/test-client.js";

export interface BenchKit {
  withServer<T>(opts: { env?: Record<string, string>; args?: string[] }, fn: (conn: BenchConn) => Promise<T>): Promise<T>;
  cpuNs(pid: number): number;
  median(xs: number[]): number;
  percentile(xs: number[], p: number): number;
  fmt(n: number, digits?: number): string;
  dir(prefix: string): string;
  workspace(): string;
  notes: string[];
}

export interface BenchConn {
  server: { child: { pid?: number } };
  client: {
    call(method: string, params?: unknown): Promise<Record<string, unknown>>;
    waitFor(match: (m: Message) => boolean, timeoutMs?: number): Promise<Message>;
    notifications(method: string): Array<Record<string, unknown>>;
    received: Message[];
    keep: boolean;
    onMessage: ((m: Message) => void) | undefined;
  };
  lastChunkAt: number;
}

export interface BenchRow {
  name: string;
  measured: string;
  target: string;
  pass?: boolean;
}

const DELTAS = 2_000;
const TURNS = 5;

function acpAgent(fake: FakeModelServer, dataDir: string) {
  return {
    type: "acp" as const,
    command: process.execPath,
    args: [CLI_PATH, "acp", "--provider", "openai-chat", "--model", "gpt-4.1", "--data-dir", dataDir],
    env: { ...modelEnv(fake), SWITCHYARD_LOG_LEVEL: "warn" },
  };
}

const isEnd = (m: Message): boolean => ["turn/completed", "turn/failed", "turn/cancelled"].includes(m.method ?? "");

/** One turn of scripted deltas on a thread; returns the server's CPU and the time to the first delta. */
async function turn(kit: BenchKit, conn: BenchConn, fake: FakeModelServer, threadId: string, label: string) {
  const pid = conn.server.child.pid!;
  const deltas = Array.from({ length: DELTAS }, (_, i) => `${label}d${i} `);
  fake.enqueue({ kind: "response", text: deltas });
  let firstAt = 0;
  const first = conn.client.waitFor(
    (m) => m.method === "item/agentMessage/delta" && m.params?.threadId === threadId && ((firstAt = conn.lastChunkAt), true),
    60_000,
  );
  first.catch(() => {});
  const ended = conn.client.waitFor((m) => isEnd(m) && m.params?.threadId === threadId, 120_000);
  const cpu0 = kit.cpuNs(pid);
  const t0 = performance.now();
  await conn.client.call("turn/start", { threadId, input: text(`Stream ${DELTAS} deltas.`) });
  const end = await ended;
  if (end.method !== "turn/completed") throw new Error(`turn ended with ${end.method}: ${JSON.stringify(end.params)}`);
  const got = conn.client
    .notifications("item/agentMessage/delta")
    .filter((p) => p["threadId"] === threadId)
    .map((p) => p["delta"])
    .join("");
  const ok = got === deltas.join("");
  conn.client.received.splice(0);
  return { cpuMs: (kit.cpuNs(pid) - cpu0) / 1e6, firstDeltaMs: firstAt - t0, ok };
}

/** CPU per delta of the server process on the built-in backend and on the acp backend. */
export async function acpPerDelta(kit: BenchKit): Promise<BenchRow[]> {
  const fake = await FakeModelServer.start();
  try {
    const ws = kit.workspace();
    const run = async (backend: ReturnType<typeof acpAgent> | undefined) =>
      kit.withServer({ env: modelEnv(fake) }, async (conn) => {
        const thread = await conn.client.call("thread/start", threadStartParams(ws, backend ? { configuration: { backend } } : {}));
        const threadId = (thread["thread"] as { id: string }).id;
        await turn(kit, conn, fake, threadId, "w"); // warm-up: the agent process starts
        const samples = [];
        for (let i = 0; i < TURNS; i++) samples.push(await turn(kit, conn, fake, threadId, `t${i}`));
        return samples;
      });
    const builtin = await run(undefined);
    const viaAcp = await run(acpAgent(fake, kit.dir("acp-agent")));
    const perDelta = (samples: Array<{ cpuMs: number }>): number => kit.median(samples.map((s) => (s.cpuMs * 1000) / DELTAS));
    const [b, a] = [perDelta(builtin), perDelta(viaAcp)];
    const ratio = a / b;
    const ok = [...builtin, ...viaAcp].every((s) => s.ok);
    kit.notes.push(
      `acp backend (agent: \`switchyard acp\` on the same fake model): the server's CPU per delta is ${kit.fmt(a)} µs against ${kit.fmt(b)} µs on the built-in backend ` +
        `(medians of ${TURNS} turns × ${kit.fmt(DELTAS, 0)} deltas after a warm-up); the agent process's own CPU is not counted.`,
    );
    return [
      {
        name: "acp backend: server CPU per delta over the built-in backend's, same fake model stream",
        measured: `${kit.fmt(ratio, 2)}×`,
        target: "< 2×",
        pass: ratio < 2,
      },
      { name: "acp backend: every delta arrived, in order", measured: ok ? "yes" : "LOST/REORDERED", target: "yes", pass: ok },
    ];
  } finally {
    await fake.close();
  }
}

/** The agent's own spawn → first agent_message_chunk, driven directly by an ACP client. */
async function directFirstChunk(fake: FakeModelServer, agent: ReturnType<typeof acpAgent>, cwd: string): Promise<number> {
  fake.enqueue({ kind: "response", text: ["first ", "chunk"] });
  const t0 = performance.now();
  const child = spawnProcess(agent.command, agent.args, { env: { ...process.env, ...agent.env }, stdio: ["pipe", "pipe", "ignore"] });
  let resolveFirst!: (at: number) => void;
  const first = new Promise<number>((resolve) => (resolveFirst = resolve));
  const app = acp.client({ name: "bench" }).onNotification(acp.methods.client.session.update, ({ params }) => {
    if (params.update.sessionUpdate === "agent_message_chunk") resolveFirst(performance.now());
  });
  const connection = app.connect(
    acp.ndJsonStream(Writable.toWeb(child.stdin) as WritableStream<Uint8Array>, Readable.toWeb(child.stdout) as ReadableStream<Uint8Array>),
  );
  try {
    await connection.agent.request(acp.methods.agent.initialize, { protocolVersion: acp.PROTOCOL_VERSION, clientCapabilities: {} });
    const { sessionId } = await connection.agent.request(acp.methods.agent.session.new, { cwd, mcpServers: [] });
    void connection.agent.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: "hi" }] }).catch(() => {});
    return (await first) - t0;
  } finally {
    connection.close();
    child.kill("SIGKILL");
  }
}

/** thread/start → first delta with the acp backend, less the agent's own time to its first chunk. */
export async function acpFirstDelta(kit: BenchKit): Promise<BenchRow[]> {
  const fake = await FakeModelServer.start();
  try {
    const ws = kit.workspace();
    const agent = acpAgent(fake, kit.dir("acp-agent"));
    await directFirstChunk(fake, agent, ws); // warms the OS file cache for the agent's files
    const direct: number[] = [];
    const via: number[] = [];
    await kit.withServer({ env: modelEnv(fake) }, async (conn) => {
      for (let i = 0; i < 5; i++) {
        direct.push(await directFirstChunk(fake, agent, ws));
        fake.enqueue({ kind: "response", text: ["first ", "chunk"] });
        let firstAt = 0;
        const t0 = performance.now();
        const thread = await conn.client.call("thread/start", threadStartParams(ws, { configuration: { backend: agent } }));
        const threadId = (thread["thread"] as { id: string }).id;
        const first = conn.client.waitFor(
          (m) => m.method === "item/agentMessage/delta" && m.params?.threadId === threadId && ((firstAt = conn.lastChunkAt), true),
          60_000,
        );
        const ended = conn.client.waitFor((m) => isEnd(m) && m.params?.threadId === threadId, 60_000);
        await conn.client.call("turn/start", { threadId, input: text("hi") });
        await first;
        via.push(firstAt - t0);
        await ended;
        await conn.client.call("thread/delete", { threadId }); // stops its agent process
        conn.client.received.splice(0);
      }
    });
    const overhead = kit.median(via) - kit.median(direct);
    kit.notes.push(
      `acp backend, first delta: thread/start → first delta ${kit.fmt(kit.median(via))} ms through Switchyard (a new agent process per thread); ` +
        `the same agent driven directly by an ACP client, spawn → first chunk: ${kit.fmt(kit.median(direct))} ms (medians of 5).`,
    );
    return [
      {
        name: "acp backend: thread/start → first delta, Switchyard's overhead beyond the agent's own",
        measured: `${kit.fmt(overhead)} ms`,
        target: "< 50 ms",
        pass: overhead < 50,
      },
    ];
  } finally {
    await fake.close();
  }
}
