// Benchmarks of the AgentCompany face over a real `ac server:start` process:
// - index.sync of 100,000 events appended since the last sync (target under 2 s);
// - monitor.snapshot over 1,000 runs, its incremental index sync included (target under 100 ms).
// Workspaces are seeded by writing valid hash-chained logs directly (fast, no fsync per line).
import { appendFileSync, mkdirSync } from "node:fs";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { newId, writeYaml } from "../src/faces/agentcompany/files.js";
import { hashOf, type EventEnvelope } from "../src/faces/agentcompany/run-log.js";
import { initWorkspace, layout } from "../src/faces/agentcompany/workspace.js";
import { ServerProcess } from "../test/support/server-process.js";
import { TestClient } from "../test/support/test-client.js";
import type { BenchKit, BenchRow } from "./backends.js";

interface SeededRun {
  projectId: string;
  runId: string;
  file: string;
  lastHash: string | null;
}

function seedRuns(ws: string, projectId: string, agentId: string, count: number): SeededRun[] {
  return Array.from({ length: count }, () => {
    const runId = newId("run");
    const dir = layout.run(ws, projectId, runId);
    mkdirSync(path.join(dir, "outputs"), { recursive: true });
    const file = path.join(dir, "events.jsonl");
    writeYaml(path.join(dir, "run.yaml"), {
      schema_version: 1,
      type: "run",
      id: runId,
      project_id: projectId,
      agent_id: agentId,
      provider: "cmd",
      created_at: new Date().toISOString(),
      status: "running",
      events_relpath: path.relative(ws, file),
    });
    const run = { projectId, runId, file, lastHash: null };
    appendEvents(run, 1);
    return run;
  });
}

/** Appends `count` valid, chained events to the run's log in one write. */
function appendEvents(run: SeededRun, count: number): void {
  const lines: string[] = [];
  for (let i = 0; i < count; i++) {
    const body: Omit<EventEnvelope, "event_hash"> = {
      schema_version: 1,
      event_id: newId("evt"),
      correlation_id: `local_${run.runId}`,
      causation_id: null,
      ts_wallclock: new Date().toISOString(),
      ts_monotonic_ms: Math.floor(performance.timeOrigin + performance.now()),
      run_id: run.runId,
      session_ref: `local_${run.runId}`,
      actor: "system",
      visibility: "team",
      type: "provider.raw",
      payload: { stream: "stdout", chunk: `line ${i} of some command output\n` },
      prev_event_hash: run.lastHash,
    };
    const event_hash = hashOf(body);
    lines.push(JSON.stringify({ ...body, event_hash }));
    run.lastHash = event_hash;
  }
  appendFileSync(run.file, `${lines.join("\n")}\n`);
}

async function withAc<T>(fn: (client: TestClient) => Promise<T>): Promise<T> {
  const server = ServerProcess.spawn({ command: "agentcompany", args: ["server:start"], env: { SWITCHYARD_LOG_LEVEL: "warn" } });
  try {
    return await fn(TestClient.overStdio(server.child));
  } finally {
    await server.kill();
  }
}

export async function agentCompanySync(kit: BenchKit): Promise<BenchRow[]> {
  const ws = path.join(kit.dir("ac-sync"), "ws");
  const { project_id, agent_id } = initWorkspace(ws);
  const runs = seedRuns(ws, project_id, agent_id, 100);
  return withAc(async (client) => {
    await client.call("index.sync", { workspace_dir: ws });
    const times: number[] = [];
    for (let round = 0; round < 3; round++) {
      for (const run of runs) appendEvents(run, round === 0 ? 1_000 : 100);
      const t0 = performance.now();
      const added = await client.call("index.sync", { workspace_dir: ws });
      const ms = performance.now() - t0;
      if (round === 0) {
        if (added.events !== 100_000) throw new Error(`index.sync added ${String(added.events)} events, not 100,000`);
        times.push(ms);
      }
    }
    const ms = times[0]!;
    return [
      {
        name: "AgentCompany `index.sync` of 100,000 appended events (100 runs × 1,000)",
        measured: `${kit.fmt(ms, 0)} ms`,
        target: "< 2,000 ms",
        pass: ms < 2_000,
      },
    ];
  });
}

export async function agentCompanyMonitor(kit: BenchKit): Promise<BenchRow[]> {
  const ws = path.join(kit.dir("ac-monitor"), "ws");
  const { project_id, agent_id } = initWorkspace(ws);
  const runs = seedRuns(ws, project_id, agent_id, 1_000);
  for (const run of runs) appendEvents(run, 4);
  return withAc(async (client) => {
    await client.call("index.sync", { workspace_dir: ws });
    const times: number[] = [];
    for (let i = 0; i < 7; i++) {
      const t0 = performance.now();
      const snapshot = await client.call("monitor.snapshot", { workspace_dir: ws, limit: 1_000 });
      times.push(performance.now() - t0);
      if ((snapshot.rows as unknown[]).length !== 1_000) throw new Error("monitor.snapshot did not list 1,000 runs");
    }
    const ms = kit.median(times.slice(2));
    return [
      {
        name: "AgentCompany `monitor.snapshot` over 1,000 runs, incremental index sync included (median of 5 after 2 warm-ups)",
        measured: `${kit.fmt(ms, 1)} ms`,
        target: "< 100 ms",
        pass: ms < 100,
      },
    ];
  });
}
