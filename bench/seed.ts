// Seeds a data dir directly through the store (before a server starts), for the read benchmarks.
import { newId, newThreadId } from "../src/ids.js";
import type { Item, Thread, Turn } from "../src/domain/model.js";
import { openStore } from "../src/store/sqlite-store.js";

export function makeThread(i: number, workspacePath: string): Thread {
  const at = new Date(Date.UTC(2026, 0, 1) + i * 60_000).toISOString();
  return {
    id: newThreadId(),
    workspacePath,
    userId: "bench",
    originChannel: "bench",
    channelContext: `workspace:${workspacePath}`,
    displayName: `Thread ${i}`,
    status: "active",
    createdAt: at,
    lastActiveAt: at,
    historyMode: "server",
    mode: "agent",
    metadata: {},
    queuedInputs: [],
  };
}

/** `count` empty threads (thread.created events only). */
export async function seedThreads(dataDir: string, workspacePath: string, count: number): Promise<void> {
  const store = openStore(dataDir);
  for (let i = 0; i < count; i++) {
    const thread = makeThread(i, workspacePath);
    store.append({ type: "thread.created", threadId: thread.id, data: { thread } });
  }
  await store.close(); // flushes
}

const FILLER = "The quick brown fox jumps over the lazy dog. ";

/** One item of a turn: a user message first, then tool call / tool result / agent message. */
function makeItem(i: number, turn: Turn, at: string): Item {
  const base = {
    id: newId("item"),
    threadId: turn.threadId,
    turnId: turn.id,
    status: "completed" as const,
    createdAt: at,
    completedAt: at,
  };
  const callId = `call_${turn.id}_${Math.floor(i / 3)}`;
  if (i === 0) return { ...base, type: "userMessage", payload: { text: (turn.input[0] as { text: string }).text, input: turn.input } };
  if (i % 3 === 1) {
    const args = { path: `src/module-${i}.ts`, offset: i * 10, limit: 200 };
    return { ...base, type: "toolCall", payload: { callId, toolName: "read_file", argumentsText: JSON.stringify(args), arguments: args } };
  }
  if (i % 3 === 2)
    return { ...base, type: "toolResult", payload: { callId, toolName: "read_file", success: true, output: FILLER.repeat(9) } };
  return { ...base, type: "agentMessage", payload: { text: FILLER.repeat(5) } };
}

/**
 * One thread per entry of `itemCounts`, each with completed turns of 100 items (item.completed
 * creates the item row). Returns the thread ids in the same order.
 */
export async function seedItemThreads(dataDir: string, workspacePath: string, itemCounts: number[]): Promise<string[]> {
  const store = openStore(dataDir);
  const ids: string[] = [];
  for (const [n, items] of itemCounts.entries()) {
    const thread = makeThread(n, workspacePath);
    store.append({ type: "thread.created", threadId: thread.id, data: { thread } });
    for (let t = 0; t < items / 100; t++) {
      const at = new Date(Date.UTC(2026, 1, 1) + t * 60_000).toISOString();
      const input = [{ type: "text" as const, text: `Request ${t}: please look at the build and fix what fails.` }];
      const turn: Turn = { id: newId("turn"), threadId: thread.id, status: "running", startedAt: at, input, model: "fake-model" };
      store.append({ type: "turn.started", threadId: thread.id, data: { turn } });
      for (let i = 0; i < 100; i++) store.append({ type: "item.completed", threadId: thread.id, data: { item: makeItem(i, turn, at) } });
      const tokenUsage = { inputTokens: 1000, outputTokens: 200, totalTokens: 1200 };
      store.append({ type: "turn.completed", threadId: thread.id, data: { turnId: turn.id, completedAt: at, tokenUsage } });
    }
    await store.flush();
    ids.push(thread.id);
  }
  await store.close();
  return ids;
}
