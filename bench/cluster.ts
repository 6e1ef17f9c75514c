// Benchmark of a cluster: 3 nodes on one PostgreSQL (all on this machine, with the fake model and
// the load client), 200 threads streaming 500 deltas each at once. Each node starts a third of
// the threads and watches the other two thirds, so every thread is seen by its owner's client
// and from two other nodes. Cross-node latency: for the same (thread, seq), the time a watcher
// received it minus the time the owner's client did (one process, one clock). At a model's pace
// the rate is counted while every stream runs, beside what the model sent meanwhile. The run is
// measured after a rehearsal of it on other threads, as on a server that has been up a while.
import { readdirSync, readFileSync } from "node:fs";
import { monitorEventLoopDelay, performance } from "node:perf_hooks";
import { FakeModelServer, type ScriptStep } from "../test/support/fake-model-server.js";
import { modelEnv, text, threadStartParams } from "../test/support/harness.js";
import { loggedSeqs, postgresMissing, TestPostgres } from "../test/support/postgres.js";
import type { Message } from "../test/support/test-client.js";
import type { BenchConn, BenchKit, BenchRow } from "./backends.js";

const NODES = 3;
const THREADS = 200;
const DELTAS = 500;
/** turn/starts sent at once: a connection answers more than 64 requests in flight as overloaded. */
const WAVE = 48;

interface Seen {
  /** Per thread, the seqs received in order. */
  seqs: Map<string, number[]>;
  ended: Set<string>;
}

/**
 * `watchers`: from how many nodes besides its owner each thread is watched. With fewer, a node
 * reads fewer deltas: only those of threads its clients follow. `deltaEveryMs`: the model streams
 * each thread's deltas this far apart, as a real one does (about 80 a second at 12 ms), instead of
 * all at once: latency is then measured at a rate the cluster sustains, not in a queue that grows
 * while more is offered than the two cores can take.
 */
export async function clusterFanOut(kit: BenchKit, watchers: 1 | 2 = 2, deltaEveryMs = 0): Promise<BenchRow[]> {
  const label = `${watchers === 2 ? "" : ", watched from one other node"}${deltaEveryMs ? `, deltas ${deltaEveryMs} ms apart` : ""}`;
  const names = {
    lost: `Cluster${label}, ${NODES} nodes, ${THREADS} threads × ${DELTAS} deltas watched from ${watchers === 2 ? "every node" : "its owner's and one other"}: events lost or repeated`,
    // At a model's pace the rate is the cluster's while every stream runs: over the whole run it
    // cannot pass the pace's own (102,000 events over 6.0 s of streams and 0.5 s of starting
    // turns, 15,700 a second at deltas 12 ms apart, with no queue at all).
    rate: deltaEveryMs
      ? `Cluster${label}: events committed per second while every stream runs (the last thread's first delta to the first turn's end, as the owners' clients received them)`
      : `Cluster${label}: events committed per second (all threads, first turn/start to the last turn end seen everywhere)`,
    p99: `Cluster${label}: cross-node delivery p99 (a watcher's receipt minus the owner's client's)`,
  };
  const follows = (node: number, i: number): boolean => watches(watchers, node, i);
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
      // A fresh node's first seconds go to V8 compiling its hot code (a sixth of its CPU over a
      // cold run), which a server that has been up a while has done: the run is measured once
      // the nodes have served one like it.
      await rehearse(nodes, fake, ws, watchers, deltaEveryMs);
      kit.notes.push(
        `Cluster${label}: measured after a rehearsal on the same nodes (${THREADS} other threads × ${DELTAS} deltas, watched alike, unmeasured).`,
      );
      const threads = await startThreads(nodes, ws, watchers);

      const ownerOf = new Map(threads.map((threadId, i) => [threadId, i % NODES]));
      // Per thread, indexed by seq (the bench process reads every copy: no string key per event).
      const ownerAt = new Map(threads.map((threadId) => [threadId, [] as number[]]));
      /** Receipts by a watcher of events the owner's client had not received yet. */
      const watchersFirst = new Map(threads.map((threadId) => [threadId, [] as Array<number[] | undefined>]));
      /** What the owner's client got, other than deltas: to name an event a watcher missed. */
      const ownerMethods = new Map<string, string>();
      const latencies: number[] = [];
      /** When each of `latencies` was taken. */
      const latencyAt: number[] = [];
      // Every (owner's client, watcher) pair counts, also when the watcher got it first.
      const pair = (watcherAt: number, ownerAt: number): void => {
        latencies.push(watcherAt - ownerAt);
        latencyAt.push(Math.max(watcherAt, ownerAt));
      };
      const seen: Seen[] = nodes.map(() => ({ seqs: new Map(), ended: new Set() }));
      /** When an owner's client first saw a turn end: the end of the window where every stream runs. */
      let firstEndAt: number | undefined;
      let sentAtFirstEnd = 0;
      /** Threads whose owner's client got a delta: every stream runs once all have. */
      const streaming = new Set<string>();
      let allStreamingAt: number | undefined;
      let sentAtAllStreaming = 0;
      const followed = nodes.map((_, node) => threads.filter((_, i) => follows(node, i)).length);
      let allEnded!: () => void;
      const done = new Promise<void>((resolve) => (allEnded = resolve));
      // Events follow a turn's end in the same commit (thread/runtimeChanged); a client is
      // checked once it has everything committed, not as soon as it has the turn's end.
      let heads: Map<string, number> | undefined;
      let allCaughtUp!: () => void;
      const caughtUp = new Promise<void>((resolve) => (allCaughtUp = resolve));
      const isCaughtUp = (): boolean =>
        threads.every((threadId, i) =>
          seen.every((s, node) => !follows(node, i) || (s.seqs.get(threadId)?.at(-1) ?? 0) >= heads!.get(threadId)!),
        );
      for (const [n, node] of nodes.entries()) {
        node.client.keep = false;
        node.client.onMessage = (m: Message) => {
          const params = m.params as { threadId?: string; seq?: number } | undefined;
          if (m.id !== undefined || typeof params?.threadId !== "string" || typeof params.seq !== "number") return;
          const at = performance.now();
          const { threadId, seq } = params;
          const owner = ownerOf.get(threadId) === n;
          if (owner) {
            ownerAt.get(threadId)![seq] = at;
            if (m.method !== "item/agentMessage/delta") ownerMethods.set(`${threadId}#${seq}`, m.method!);
            else if (!streaming.has(threadId)) {
              streaming.add(threadId);
              if (streaming.size === THREADS) {
                allStreamingAt = at;
                sentAtAllStreaming = fake.stats.deltasSent;
              }
            }
            const early = watchersFirst.get(threadId)!;
            for (const watcherAt of early[seq] ?? []) pair(watcherAt, at);
            early[seq] = undefined;
          } else {
            const from = ownerAt.get(threadId)![seq];
            if (from !== undefined) pair(at, from);
            else (watchersFirst.get(threadId)![seq] ??= []).push(at);
          }
          const list = seen[n]!.seqs.get(threadId) ?? [];
          list.push(seq);
          seen[n]!.seqs.set(threadId, list);
          if (m.method === "turn/completed" || m.method === "turn/failed") {
            if (owner && firstEndAt === undefined) {
              firstEndAt = at;
              sentAtFirstEnd = fake.stats.deltasSent;
            }
            seen[n]!.ended.add(threadId);
            if (seen.every((s, node) => s.ended.size === followed[node])) allEnded();
          }
          if (heads && isCaughtUp()) allCaughtUp();
        };
      }

      const deltas = Array.from({ length: DELTAS }, (_, i) => `d${i} `);
      for (let i = 0; i < THREADS; i++) fake.enqueue(stream(deltas, deltaEveryMs));
      const t0 = performance.now();
      // When the turns' model requests reached the model: a turn prepares (reads its history)
      // before it asks, on cores already busy streaming the turns that asked first.
      const asked = fake.requests.length;
      const askedAt = { half: NaN, all: NaN };
      void fake.waitForRequests(asked + THREADS / 2).then(() => (askedAt.half = performance.now() - t0));
      void fake.waitForRequests(asked + THREADS).then(() => (askedAt.all = performance.now() - t0));
      // How late this process (the clients' clock) was itself: its receipts wait for its turn on a core.
      const loopDelay = monitorEventLoopDelay({ resolution: 5 });
      loopDelay.enable();
      const loop0 = performance.eventLoopUtilization();
      const benchCpu0 = process.cpuUsage();
      const nodeCpu0 = nodes.map((node) => kit.cpuNs(node.server.child.pid!));
      const postgresCpu0 = postgresCpuNs(kit);
      /** How long each turn/start took to be answered: the later waves wait for cores busy streaming the earlier ones. */
      const startTimes: number[] = [];
      await startTurns(nodes, threads, (ms) => startTimes.push(ms));
      const allStarted = performance.now() - t0;
      await done;
      const seconds = (performance.now() - t0) / 1000;
      loopDelay.disable();
      const loopBusy = performance.eventLoopUtilization(loop0).utilization;
      // Where the two cores went: each node, and this process (the fake model and the three clients).
      const benchCpu = process.cpuUsage(benchCpu0);
      const nodeCpuS = nodes.map((node, i) => (kit.cpuNs(node.server.child.pid!) - nodeCpu0[i]!) / 1e9);
      const postgresCpuS = [...postgresCpuNs(kit)].reduce((ns, [pid, cpu]) => ns + cpu - (postgresCpu0.get(pid) ?? 0), 0) / 1e9;
      heads = await committedHeads(url, threads);
      if (isCaughtUp()) allCaughtUp();
      await Promise.race([caughtUp, new Promise((resolve) => setTimeout(resolve, 10_000).unref())]);

      // Every client saw each thread's events in order, once each; watchers saw what the owner's client saw.
      let lost = 0;
      const lostAt: string[] = [];
      let repeated = 0;
      for (const [i, threadId] of threads.entries()) {
        const owned = seen[i % NODES]!.seqs.get(threadId) ?? [];
        for (const [node, s] of seen.entries()) {
          if (!follows(node, i)) continue;
          const seqs = s.seqs.get(threadId) ?? [];
          repeated += seqs.filter((seq, k) => k > 0 && seq <= seqs[k - 1]!).length;
          const got = new Set(seqs);
          const missed = owned.filter((seq) => !got.has(seq));
          lost += missed.length;
          // Where, for whoever looks into it: which node missed what, and what it did see last.
          if (missed.length > 0 && lostAt.length < 5)
            lostAt.push(
              `node ${node} missed ${threadId} seq ${missed.map((seq) => `${seq} (${ownerMethods.get(`${threadId}#${seq}`) ?? "a delta"})`).join(", ")} (it saw ${seqs.length} events, the last ${seqs.at(-1)})`,
            );
        }
      }
      if (lostAt.length > 0) kit.notes.push(`Cluster${label}: lost events: ${lostAt.join("; ")}.`);
      const committed = [...heads.values()].reduce((n, head) => n + head, 0);
      const rate = committed / seconds;
      // Where the tail is: while the turns start, while they end, or while they stream.
      const end = t0 + seconds * 1000;
      const p99Where = (keep: (at: number) => boolean): string =>
        kit.fmt(
          kit.percentile(
            latencies.filter((_, i) => keep(latencyAt[i]!)),
            99,
          ),
          0,
        );
      kit.notes.push(
        `Cluster${label}: cross-node p99 over the first 2 s (${THREADS} turns starting) ${p99Where((at) => at < t0 + 2000)} ms, ` +
          `the last 2 s (turns ending) ${p99Where((at) => at > end - 2000)} ms, in between ${p99Where((at) => at >= t0 + 2000 && at <= end - 2000)} ms.`,
      );
      const p99 = kit.percentile(latencies, 99);
      // While every stream runs (the last thread's first delta to the first turn's end): what the
      // owners' clients received a second, what the model sent, and the p99 of the pairs taken then.
      const [from, to] = allStreamingAt !== undefined && firstEndAt !== undefined ? [allStreamingAt, firstEndAt] : [0, 0];
      const steadySeconds = Math.max(0, to - from) / 1000;
      const steadyReceived = [...ownerAt.values()].reduce((n, at) => n + at.filter((t) => t >= from && t <= to).length, 0);
      const perSecond = (n: number): number => (steadySeconds > 0 ? n / steadySeconds : 0);
      const steadyRate = perSecond(steadyReceived);
      const steadyP99 = kit.percentile(
        latencies.filter((_, i) => latencyAt[i]! >= from && latencyAt[i]! <= to),
        99,
      );
      const measuredRate = deltaEveryMs ? steadyRate : rate;
      const offered = deltaEveryMs ? (THREADS * 1000) / deltaEveryMs : Infinity;
      // On a slow machine the first turn can end before the last thread's first delta: no window.
      const noWindow = deltaEveryMs > 0 && steadySeconds === 0;
      if (deltaEveryMs) {
        const streams = noWindow
          ? "the streams never all ran at once (the first turn ended before the last thread's first delta)"
          : `every stream ran for ${kit.fmt(steadySeconds, 2)} s (cross-node p99 then ${kit.fmt(steadyP99, 1)} ms; the model sent ${kit.fmt(perSecond(sentAtFirstEnd - sentAtAllStreaming), 0)} deltas a second)`;
        kit.notes.push(`Cluster${label}: ${streams}; over the whole run, ${kit.fmt(rate, 0)} events a second.`);
      }
      kit.notes.push(
        `Cluster${label}: the ${THREADS} turns were started (turn/start answered) ${kit.fmt(allStarted, 0)} ms after the first was sent; ` +
          `each answered after a median ${kit.fmt(kit.median(startTimes), 0)} ms, at most ${kit.fmt(Math.max(...startTimes), 0)} ms; ` +
          `half of their model requests had reached the model after ${kit.fmt(askedAt.half, 0)} ms, all after ${kit.fmt(askedAt.all, 0)} ms.`,
        `Cluster: ${kit.fmt(committed, 0)} events committed in ${kit.fmt(seconds, 2)} s; ${kit.fmt(latencies.length, 0)} pairs of an owner's client's and a watcher's receipt, median ${kit.fmt(kit.median(latencies), 1)} ms.`,
        `Cluster CPU over those ${kit.fmt(seconds, 2)} s (${kit.fmt(2 * seconds, 2)} core-seconds on 2 cores): nodes ${nodeCpuS.map((s) => kit.fmt(s, 2)).join(" + ")} s; ` +
          `the bench process (fake model, three clients) ${kit.fmt((benchCpu.user + benchCpu.system) / 1e6, 2)} s; PostgreSQL ${kit.fmt(postgresCpuS, 2)} s.`,
        `Cluster: the bench process's event loop was busy ${kit.fmt(loopBusy * 100, 0)}% of the time (waiting for a core included), its delay p99 ${kit.fmt(loopDelay.percentile(99) / 1e6, 0)} ms, ` +
          `max ${kit.fmt(loopDelay.max / 1e6, 0)} ms: a receipt is timed when this process gets to read it.`,
      );
      return [
        { name: names.lost, measured: `${lost} lost, ${repeated} repeated`, target: "0, 0", pass: lost === 0 && repeated === 0 },
        // A pace that offers fewer than 15,000 events a second (30 ms apart: 6,700) is measured for its latency.
        offered >= 15_000
          ? {
              name: names.rate,
              measured: noWindow ? `none: the streams never all ran at once` : `${kit.fmt(measuredRate, 0)} /s`,
              target: "≥ 15,000 /s",
              pass: measuredRate >= 15_000,
            }
          : { name: names.rate, measured: `${kit.fmt(measuredRate, 0)} /s (${kit.fmt(offered, 0)} offered)`, target: "" },
        { name: names.p99, measured: `${kit.fmt(p99, 1)} ms`, target: "≤ 100 ms", pass: p99 <= 100 },
      ];
    });
  } finally {
    await fake.close();
    postgres.stop();
  }
}

/** Thread i is started (owned) by node i % NODES and watched from the next node (and the one after). */
function watches(watchers: number, node: number, i: number): boolean {
  return (node - (i % NODES) + NODES) % NODES <= watchers;
}

/** The model's script for one thread's turn. */
function stream(deltas: string[], deltaEveryMs: number): ScriptStep {
  return { kind: "response", text: deltas, ...(deltaEveryMs ? { chunkDelayMs: deltaEveryMs } : { oneWrite: true }) };
}

/** THREADS threads, thread i started on node i % NODES and subscribed to where it is watched. */
async function startThreads(nodes: BenchConn[], ws: string, watchers: number): Promise<string[]> {
  const threads: string[] = [];
  for (let i = 0; i < THREADS; i++) {
    const started = await nodes[i % NODES]!.client.call("thread/start", threadStartParams(ws));
    threads.push((started.thread as { id: string }).id);
  }
  for (const [n, node] of nodes.entries()) {
    for (const [i, threadId] of threads.entries()) {
      if (i % NODES !== n && watches(watchers, n, i)) await node.client.call("thread/subscribe", { threadId });
    }
  }
  return threads;
}

/** A turn on each thread, on its owner; `answered` gets how long each turn/start took. */
async function startTurns(nodes: BenchConn[], threads: string[], answered: (ms: number) => void = () => {}): Promise<void> {
  for (let wave = 0; wave < threads.length; wave += WAVE) {
    const starts = threads.slice(wave, wave + WAVE).map(async (threadId, k) => {
      const sent = performance.now();
      await nodes[(wave + k) % NODES]!.client.call("turn/start", { threadId, input: text("Stream.") });
      answered(performance.now() - sent);
    });
    await Promise.all(starts);
  }
}

/** THREADS other turns streamed and watched as the measured ones are; resolves once every client saw them end. */
async function rehearse(nodes: BenchConn[], fake: FakeModelServer, ws: string, watchers: number, deltaEveryMs: number): Promise<void> {
  const threads = await startThreads(nodes, ws, watchers);
  let ends = threads.reduce((n, _, i) => n + nodes.filter((_, node) => watches(watchers, node, i)).length, 0);
  let allEnded!: () => void;
  const done = new Promise<void>((resolve) => (allEnded = resolve));
  for (const node of nodes) {
    node.client.keep = false;
    node.client.onMessage = (m: Message) => {
      if ((m.method === "turn/completed" || m.method === "turn/failed") && --ends === 0) allEnded();
    };
  }
  const deltas = Array.from({ length: DELTAS }, (_, i) => `r${i} `);
  for (let i = 0; i < THREADS; i++) fake.enqueue(stream(deltas, deltaEveryMs));
  await startTurns(nodes, threads);
  await done;
}

/** CPU time of each PostgreSQL process on this machine (the server and its sessions), by pid. */
function postgresCpuNs(kit: BenchKit): Map<string, number> {
  const cpu = new Map<string, number>();
  for (const pid of readdirSync("/proc").filter((name) => /^\d+$/.test(name))) {
    try {
      if (readFileSync(`/proc/${pid}/comm`, "utf8").trim() === "postgres") cpu.set(pid, kit.cpuNs(Number(pid)));
    } catch {
      // the process ended meanwhile
    }
  }
  return cpu;
}

/** Each thread's last committed seq. */
async function committedHeads(url: string, threads: string[]): Promise<Map<string, number>> {
  const { postgresPool } = await import("../src/store/postgres-schema.js");
  const pool = await postgresPool(url);
  try {
    const { rows } = await pool.query<{ thread_id: string; head: number }>(
      "SELECT thread_id, max(coalesce(last_seq, seq))::int AS head FROM events WHERE thread_id = ANY($1) GROUP BY thread_id",
      [threads],
    );
    return new Map(rows.map((r) => [r.thread_id, r.head]));
  } finally {
    await pool.end();
  }
}

const KILLS = 10;

interface TakeoverMode {
  /** The row's name: failover (killed) or handover (stopped). */
  label: string;
  signal: NodeJS.Signals;
  failover: "fail" | "continue";
  names: { takeover: string; gaps: string };
  /** Whether this watcher message shows another node has the turn (`deltas`: the deltas seen so far). */
  takenOver(method: string | undefined, params: { error?: { code?: string } }, deltas: number): boolean;
  /** How the turn must end. */
  endsWith: "turn/failed" | "turn/completed";
  /** What the model answers the node that continues the turn, if one does. */
  continuation?: string;
}

const TAKEOVER_MODES: Record<"kill" | "stop", TakeoverMode> = {
  kill: {
    label: "failover",
    signal: "SIGKILL",
    failover: "fail",
    names: {
      takeover: `Cluster failover: owner killed mid-stream ${KILLS} times, takeover p99 (kill → the watcher hears turn/failed ownerLost)`,
      gaps: "Cluster failover: the watcher's events after each kill equal the events table (no gap, no duplicate)",
    },
    takenOver: (method, params) => method === "turn/failed" && params.error?.code === "ownerLost",
    endsWith: "turn/failed",
  },
  stop: {
    label: "handover",
    signal: "SIGTERM",
    failover: "continue",
    names: {
      takeover: `Cluster handover: owner stopped (SIGTERM) mid-stream ${KILLS} times, takeover p99 (stop → the watcher hears the cut message closed by another node)`,
      gaps: "Cluster handover: the turn completes elsewhere, and the watcher's events equal the events table (no gap, no duplicate)",
    },
    takenOver: (method, _, deltas) => method === "item/completed" && deltas >= 50,
    endsWith: "turn/completed",
    continuation: "carried on",
  },
};

/**
 * Failover: a node runs a streaming turn watched from another; it is killed (SIGKILL) mid-stream,
 * 10 times. Takeover: from the kill until the watcher hears the turn failed (ownerLost) from a
 * live node. Each time the watcher's events are checked against the events table.
 * `stop`: the node is stopped (SIGTERM) instead and hands its turn over (failover: continue);
 * takeover lasts until the watcher hears the turn's cut message closed by the node that took it,
 * and the turn must then complete there.
 */
export async function clusterFailover(kit: BenchKit, how: "kill" | "stop" = "kill"): Promise<BenchRow[]> {
  const mode = TAKEOVER_MODES[how];
  const { names } = mode;
  const missing = postgresMissing();
  if (missing) return Object.values(names).map((name) => ({ name, measured: `not run: ${missing}`, target: "", pass: false }));
  const postgres = await TestPostgres.start();
  const fake = await FakeModelServer.start();
  const url = postgres.createDatabase("failover");
  const opts = { env: modelEnv(fake), args: ["--store", url, "--failover", mode.failover] };
  const { postgresPool } = await import("../src/store/postgres-schema.js");
  const db = await postgresPool(url);
  try {
    return await kit.withServer(opts, async (watcher) =>
      kit.withServer(opts, async () => {
        const ws = kit.workspace();
        const takeovers: number[] = [];
        let mismatches = 0;
        // A turn that did not end as meant leaves the model's script out of step: the rounds stop.
        for (let round = 0, inStep = true; round < KILLS && inStep; round++) {
          inStep = await kit.withServer(opts, async (owner) => {
            const threadId = ((await owner.client.call("thread/start", threadStartParams(ws))).thread as { id: string }).id;
            await watcher.client.call("thread/subscribe", { threadId });
            const seqs: number[] = [];
            watcher.client.keep = false;
            let takenAt = 0;
            let takenOver!: () => void;
            const tookOver = new Promise<void>((resolve) => (takenOver = resolve));
            let completed!: (done: boolean) => void;
            const ended = new Promise<boolean>((resolve) => (completed = resolve));
            let deltas = 0;
            let midStream!: () => void;
            const streaming = new Promise<void>((resolve) => (midStream = resolve));
            watcher.client.onMessage = (m: Message) => {
              const params = m.params as { threadId?: string; seq?: number; error?: { code?: string } } | undefined;
              if (m.id !== undefined || params?.threadId !== threadId || typeof params.seq !== "number") return;
              seqs.push(params.seq);
              if (m.method === "item/agentMessage/delta" && ++deltas === 50) midStream();
              // Any end counts (a cancelled turn too: the stopped node did not hand it over); the
              // row fails unless it is the one meant.
              const ends = m.method === "turn/completed" || m.method === "turn/failed" || m.method === "turn/cancelled";
              if ((mode.takenOver(m.method, params, deltas) || ends) && takenAt === 0) {
                takenAt = performance.now();
                takenOver();
              }
              if (ends) completed(m.method === mode.endsWith);
            };
            fake.enqueue({ kind: "response", text: Array.from({ length: 2_000 }, (_, i) => `k${i} `), chunkDelayMs: 1 });
            if (mode.continuation) fake.enqueue({ kind: "response", text: mode.continuation });
            await owner.client.call("turn/start", { threadId, input: text("Stream.") });
            await streaming;
            const killedAt = performance.now();
            process.kill(owner.server.child.pid!, mode.signal);
            await tookOver;
            takeovers.push(takenAt - killedAt);
            const endedAsMeant = await ended;
            const logged = await loggedSeqs(db, threadId);
            const contiguous = logged.every((seq, i) => seq === i + 1);
            const inOrder = seqs.every((seq, i) => i === 0 || seq > seqs[i - 1]!);
            if (!endedAsMeant || !contiguous || !inOrder || seqs.at(-1) !== logged.at(-1) || seqs.some((s) => !logged.includes(s)))
              mismatches++;
            watcher.client.onMessage = undefined;
            return endedAsMeant;
          });
        }
        takeovers.sort((a, b) => a - b);
        const p99 = kit.percentile(takeovers, 99);
        kit.notes.push(`Cluster ${mode.label} takeovers (ms): ${takeovers.map((t) => kit.fmt(t, 0)).join(", ")}.`);
        return [
          { name: names.takeover, measured: `${kit.fmt(p99, 0)} ms`, target: "≤ 3,000 ms", pass: p99 <= 3_000 },
          { name: names.gaps, measured: `${mismatches} of ${takeovers.length} differ`, target: "0", pass: mismatches === 0 },
        ];
      }),
    );
  } finally {
    await db.end();
    await fake.close();
    postgres.stop();
  }
}
