// Benchmark of the Yeaft relay: 50 browsers and 5 agents at once on a real relay process. Each
// agent streams claude_output to its conversations; the latency is from the agent's send to the
// browser's receipt (same machine, same clock), which is the relay's forwarding plus loopback.
// Targets: p99 under 5 ms, no message lost.
import path from "node:path";
import { performance } from "node:perf_hooks";
import WebSocket from "ws";
import { UserStore } from "../src/faces/yeaft/users.js";
import { freePort, ServerProcess } from "../test/support/server-process.js";
import type { BenchKit, BenchRow } from "./backends.js";

const AGENTS = 5;
const BROWSERS_PER_AGENT = 10;
const MESSAGES_PER_CONVERSATION = 40;

/** Messages that came before anyone asked for them (a frame can arrive with the upgrade). */
const early = new WeakMap<WebSocket, Array<Record<string, unknown>>>();

function open(url: string, headers: Record<string, string> = {}): Promise<WebSocket> {
  const ws = new WebSocket(url, { headers });
  const inbox: Array<Record<string, unknown>> = [];
  early.set(ws, inbox);
  ws.on("message", (raw) => inbox.push(JSON.parse(raw.toString()) as Record<string, unknown>));
  return new Promise((resolve, reject) => {
    ws.once("open", () => resolve(ws));
    ws.once("error", reject);
  });
}

async function next(ws: WebSocket, type: string): Promise<Record<string, unknown>> {
  const inbox = early.get(ws)!;
  for (;;) {
    const at = inbox.findIndex((m) => m.type === type);
    if (at !== -1) return inbox.splice(at, 1)[0]!;
    await new Promise((resolve) => ws.once("message", resolve));
  }
}

export async function yeaftRelay(kit: BenchKit): Promise<BenchRow[]> {
  const dataDir = kit.dir("yeaft-bench");
  const users = UserStore.inFile(path.join(dataDir, "yeaft", "users.json"));
  const accounts = await Promise.all(Array.from({ length: AGENTS }, (_, i) => users.add(`user${i}`, `password-${i}-long`)));
  const port = await freePort();
  const relay = ServerProcess.spawn({
    command: ["yeaft", "relay"],
    args: ["--port", String(port)],
    dataDir,
    env: { SWITCHYARD_LOG_LEVEL: "info" },
  });
  try {
    await relay.waitForLog((l) => l.msg === "yeaft relay listening");
    const ws = `ws://127.0.0.1:${port}/`;
    const latencies: number[] = [];
    let expected = 0;
    let received = 0;
    await Promise.all(
      accounts.map(async (account, a) => {
        const agent = await open(`${ws}?type=agent&id=bench${a}`);
        const challenge = await next(agent, "auth_required");
        agent.send(JSON.stringify({ type: "auth", tempId: challenge.tempId, secret: account.agentSecret }));
        const { agentId } = await next(agent, "registered");
        const login = (await (
          await fetch(`http://127.0.0.1:${port}/api/auth/login`, {
            method: "POST",
            body: JSON.stringify({ username: account.username, password: `password-${a}-long` }),
          })
        ).json()) as { token: string };
        const browsers = await Promise.all(Array.from({ length: BROWSERS_PER_AGENT }, () => open(`${ws}?type=web&token=${login.token}`)));
        // Each browser's conversation; the agent learns them from create_conversation.
        const conversations: string[] = [];
        agent.on("message", (raw) => {
          const msg = JSON.parse(raw.toString()) as { type: string; conversationId: string };
          if (msg.type === "create_conversation") conversations.push(msg.conversationId);
        });
        await Promise.all(
          browsers.map(async (browser, b) => {
            browser.send(JSON.stringify({ type: "create_conversation", agentId, conversationId: `c-${a}-${b}`, provider: "switchyard" }));
          }),
        );
        while (conversations.length < BROWSERS_PER_AGENT) await new Promise((resolve) => setTimeout(resolve, 5));
        for (const browser of browsers) {
          browser.on("message", (raw) => {
            const msg = JSON.parse(raw.toString()) as { type: string; data?: { sentAt: number } };
            if (msg.type !== "claude_output" || !msg.data) return;
            received++;
            latencies.push(performance.timeOrigin + performance.now() - msg.data.sentAt);
          });
        }
        // A streamed turn per conversation, interleaved: one delta every 2 ms per agent. The relay
        // sends each to all of the owner's browsers (a user's tabs all follow their agents).
        for (let i = 0; i < MESSAGES_PER_CONVERSATION * conversations.length; i++) {
          const conversationId = conversations[i % conversations.length]!;
          expected += browsers.length;
          agent.send(
            JSON.stringify({
              type: "claude_output",
              conversationId,
              data: { type: "assistant", sentAt: performance.timeOrigin + performance.now(), i },
            }),
          );
          await new Promise((resolve) => setTimeout(resolve, 2));
        }
      }),
    );
    const deadline = Date.now() + 30_000;
    while (received < expected && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
    const p99 = kit.percentile(latencies, 99);
    const p50 = kit.percentile(latencies, 50);
    kit.notes.push(
      `Yeaft relay: ${expected} deliveries (each message to its owner's ${BROWSERS_PER_AGENT} browsers) from ${AGENTS} agents to ${AGENTS * BROWSERS_PER_AGENT} browsers; latency p50 ${kit.fmt(p50, 2)} ms, p99 ${kit.fmt(p99, 2)} ms (agent send → browser receipt, loopback included).`,
    );
    return [
      {
        name: `Yeaft relay: p99 agent → browser latency, ${AGENTS} agents × ${BROWSERS_PER_AGENT} browsers each, all at once`,
        measured: `${kit.fmt(p99, 2)} ms`,
        target: "< 5 ms",
        pass: p99 < 5,
      },
      { name: "Yeaft relay: messages lost", measured: String(expected - received), target: "0", pass: received === expected },
    ];
  } finally {
    await relay.kill();
  }
}
