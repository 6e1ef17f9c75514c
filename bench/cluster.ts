// Benchmark of a cluster: 3 nodes on one PostgreSQL (all on this machine, with the fake model and
// the load client), 200 threads streaming 500 deltas each at once. Each node starts a third of
// the threads and watches the other two thirds, so every thread is seen by its owner's client
// and from two other nodes. Cross-node latency: for the same (thread, seq), the time a watcher
// received it minus the time the owner's client did (one process, one clock).
import { performance } from "node:perf_hooks";
import { FakeModelServer } from "../test/support/fake-model-server.js";
import { modelEnv, text, threadStartParams } from "../test/support/harness.js";
import { postgresMissing, TestPostgres } from "../test/support/postgres.js";
import type { Message } from "../test/support/test-client.js";
import type { BenchConn, BenchKit, BenchRow } from "./backends.js";

const NODES = 3;
const THREADS = 200;
const DELTAS = 500;

interface Seen {
  /** Per thread, the seqs received in order. */
  seqs: Map<string, number[]>;
  ended: Set<string>;
}

export async function clusterFanOut(kit: BenchKit): Promise<BenchRow[]> {
  const names = {
    lost: `Cluster, ${NODES} nodes, ${THREADS} threads × ${DELTAS} deltas watched from every node: events lost or repeated`,
    rate: "Cluster: events committed per second (all threads, first turn/start to the last turn end seen everywhere)",
    p99: "Cluster: cross-node delivery p99 (a watcher's receipt minus the owner's client's)",
  };
  const missing = postgresMissing();
  if (missing) return Object.values(names).map((name) => ({ name, measured: `not run: ${missing}`, target: "", pass: false }));
  const postgres = await TestPostgres.start();
  const fake = await FakeModelServer.start();
  const url = postgres.createDatabase("cluster");
  const opts = { env: modelEnv(fake), args: ["--store", url] };
  try {
    const withNodes = <T>(n: number, conns: BenchConn[], fn: (conns: BenchConn[]) => Promise<T>): Promise<T> =>
      n === 0 ? fn(conns) : kit.withServer(opts, (conn) => withNodes(n - 1, [...conns, conn], fn));
    return await withNodes(NODES, [], async (nodes) => {
      const ws = kit.workspace();
      // Thread i is started (owned) by node i % NODES.
      const threads: string[] = [];
      for (let i = 0; i < THREADS; i++) {
        const started = await nodes[i % NODES]!.client.call("thread/start", threadStartParams(ws));
        threads.push((started.thread as { id: string }).id);
      }
      for (const [n, node] of nodes.entries()) {
        for (const [i, threadId] of threads.entries()) if (i % NODES !== n) await node.client.call("thread/subscribe", { threadId });
      }

      const ownerAt = new Map<string, number>();
      const latencies: number[] = [];
      const seen: Seen[] = nodes.map(() => ({ seqs: new Map(), ended: new Set() }));
      let allEnded!: () => void;
      const done = new Promise<void>((resolve) => (allEnded = resolve));
      for (const [n, node] of nodes.entries()) {
        node.client.keep = false;
        node.client.onMessage = (m: Message) => {
          const params = m.params as { threadId?: string; seq?: number } | undefined;
          if (m.id !== undefined || typeof params?.threadId !== "string" || typeof params.seq !== "number") return;
          const at = performance.now();
          const key = `${params.threadId}#${params.seq}`;
          const owner = threads.indexOf(params.threadId) % NODES === n;
          if (owner) ownerAt.set(key, at);
          else {
            const from = ownerAt.get(key);
            if (from !== undefined) latencies.push(at - from);
          }
          const list = seen[n]!.seqs.get(params.threadId) ?? [];
          list.push(params.seq);
          seen[n]!.seqs.set(params.threadId, list);
          if (m.method === "turn/completed" || m.method === "turn/failed") {
            seen[n]!.ended.add(params.threadId);
            if (seen.every((s) => s.ended.size === THREADS)) allEnded();
          }
        };
      }

      const deltas = Array.from({ length: DELTAS }, (_, i) => `d${i} `);
      for (let i = 0; i < THREADS; i++) fake.enqueue({ kind: "response", text: deltas });
      const t0 = performance.now();
      // In waves: a connection answers more than 64 requests in flight as overloaded.
      for (let wave = 0; wave < THREADS; wave += 48) {
        const starts = threads.slice(wave, wave + 48).map((threadId, k) => {
          const owner = nodes[(wave + k) % NODES]!;
          return owner.client.call("turn/start", { threadId, input: text("Stream.") });
        });
        await Promise.all(starts);
      }
      await done;
      const seconds = (performance.now() - t0) / 1000;

      // Every client saw each thread's events in order, once each; watchers saw what the owner's client saw.
      let lost = 0;
      let repeated = 0;
      for (const [i, threadId] of threads.entries()) {
        const owned = seen[i % NODES]!.seqs.get(threadId) ?? [];
        for (const s of seen) {
          const seqs = s.seqs.get(threadId) ?? [];
          repeated += seqs.filter((seq, k) => k > 0 && seq <= seqs[k - 1]!).length;
          const got = new Set(seqs);
          lost += owned.filter((seq) => !got.has(seq)).length;
        }
      }
      const committed = await committedEvents(url, threads);
      const rate = committed / seconds;
      latencies.sort((a, b) => a - b);
      const p99 = latencies[Math.floor(latencies.length * 0.99)] ?? NaN;
      kit.notes.push(
        `Cluster: ${kit.fmt(committed, 0)} events committed in ${kit.fmt(seconds, 2)} s; ${kit.fmt(latencies.length, 0)} cross-node receipts, median ${kit.fmt(kit.median(latencies), 1)} ms.`,
      );
      return [
        { name: names.lost, measured: `${lost} lost, ${repeated} repeated`, target: "0, 0", pass: lost === 0 && repeated === 0 },
        { name: names.rate, measured: `${kit.fmt(rate, 0)} /s`, target: "≥ 15,000 /s", pass: rate >= 15_000 },
        { name: names.p99, measured: `${kit.fmt(p99, 1)} ms`, target: "≤ 100 ms", pass: p99 <= 100 },
      ];
    });
  } finally {
    await fake.close();
    postgres.stop();
  }
}

async function committedEvents(url: string, threads: string[]): Promise<number> {
  const { postgresPool } = await import("../src/store/postgres-schema.js");
  const pool = await postgresPool(url);
  try {
    const { rows } = await pool.query<{ n: number }>("SELECT count(*)::int AS n FROM events WHERE thread_id = ANY($1)", [threads]);
    return rows[0]!.n;
  } finally {
    await pool.end();
  }
}
