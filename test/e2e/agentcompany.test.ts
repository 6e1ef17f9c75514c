// The AgentCompany face over real stdio (`switchyard agentcompany server:start`): workspace init
// and validation, runs with hash-chained event logs that survive torn and edited lines, the
// SQLite index as a rebuildable cache, lossless subscriptions, and the cross-process lock.
import assert from "node:assert/strict";
import { appendFileSync, existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { hashOf, RunLog } from "../../src/faces/agentcompany/run-log.js";
import { ServerProcess, tempDir } from "../support/server-process.js";
import { FakeModelServer } from "../support/fake-model-server.js";
import { modelEnv } from "../support/harness.js";
import { FULL_CAPABILITIES, TestClient, type Message } from "../support/test-client.js";

function startServer(dataDir?: string, env: Record<string, string> = {}): { server: ServerProcess; client: TestClient } {
  const server = ServerProcess.spawn({ command: "agentcompany", args: ["server:start"], env, ...(dataDir ? { dataDir } : {}) });
  return { server, client: TestClient.overStdio(server.child) };
}

const notifications = (client: TestClient, subscriptionId: string): Message[] =>
  client.received.filter((m) => m.method === "events.notification" && m.params?.subscription_id === subscriptionId);

describe("agentcompany server", () => {
  const ws = path.join(tempDir("company"), "acme");
  let server: ServerProcess;
  let client: TestClient;
  let ids: { project_id: string; agent_id: string };
  before(() => ({ server, client } = startServer()));
  after(() => server.kill());

  it("initializes a workspace with a default team, agent and project, and opens it", async () => {
    const init = await client.call("workspace.init", { workspace_dir: ws, company_name: "Acme" });
    ids = init as typeof ids;
    assert.match(String(init.company_id), /^cmp_[0-9A-HJKMNP-TV-Z]{26}$/);
    assert.match(readFileSync(path.join(ws, "company", "company.yaml"), "utf8"), /name: Acme/);
    assert.ok(existsSync(path.join(ws, "work", "projects", ids.project_id, "memory.md")));
    const opened = await client.call("workspace.open", { workspace_dir: ws });
    assert.equal(opened.valid, true);
    assert.deepEqual(
      (opened.projects as Array<{ id: string }>).map((p) => p.id),
      [ids.project_id],
    );
    assert.deepEqual(
      (opened.agents as Array<{ id: string }>).map((a) => a.id),
      [ids.agent_id],
    );
    const again = await client.request("workspace.init", { workspace_dir: ws });
    assert.equal(again.error?.code, -32000);
    assert.equal((again.error?.data as { code: string }).code, "WORKSPACE_EXISTS");
  });

  it("answers errors with the protocol's codes and a machine-readable data.code", async () => {
    const missing = await client.request("workspace.open", { workspace_dir: tempDir("empty") });
    assert.equal(missing.error?.code, -32000);
    assert.equal((missing.error?.data as { code: string }).code, "WORKSPACE_NOT_FOUND");
    const invalid = await client.request("run.create", { workspace_dir: ws });
    assert.equal(invalid.error?.code, -32602);
    assert.ok(Array.isArray((invalid.error?.data as { issues: unknown[] }).issues));
    assert.equal((await client.request("pm.teleport", {})).error?.code, -32601);
    writeFileSync(path.join(ws, "org", "agents", ids.agent_id, "agent.yaml"), "role: [unclosed");
    const validation = await client.call("workspace.validate", { workspace_dir: ws });
    assert.equal(validation.valid, false);
    assert.match(JSON.stringify(validation.issues), /agent\.yaml.*invalid YAML/);
    // Put it back for the tests below.
    writeFileSync(
      path.join(ws, "org", "agents", ids.agent_id, "agent.yaml"),
      `schema_version: 1\ntype: agent\nid: ${ids.agent_id}\nname: Worker\nrole: worker\nprovider: switchyard\ncreated_at: "2026-11-25T00:00:00Z"\n`,
    );
  });

  it("creates runs whose events.jsonl is a hash chain; replay reports torn lines and the first broken link", async () => {
    const created = await client.call("run.create", { workspace_dir: ws, project_id: ids.project_id, agent_id: ids.agent_id });
    const runId = created.run_id as string;
    const file = path.join(ws, String(created.events_relpath));
    const first = JSON.parse(readFileSync(file, "utf8").trim());
    assert.equal(first.type, "run.started");
    assert.equal(first.prev_event_hash, null);
    // A session writes more events (as it will through session.launch), then a crash tears a line.
    const log = new RunLog(file, { run_id: runId, session_ref: `local_${runId}` });
    log.append({ type: "run.executing", payload: { argv: ["echo", "hi"] } });
    appendFileSync(file, '{"schema_version":1,"event_id":"evt_torn"');
    // The next process to write the log starts after the torn line.
    new RunLog(file, { run_id: runId, session_ref: `local_${runId}` }).append({ type: "run.ended", payload: { exit_code: 0 } });

    const raw = await client.call("run.replay", { workspace_dir: ws, project_id: ids.project_id, run_id: runId });
    assert.deepEqual(
      (raw.events as Array<{ type: string; seq: number }>).map((e) => [e.seq, e.type]),
      [
        [1, "run.started"],
        [2, "run.executing"],
        [4, "run.ended"],
      ],
    );
    assert.equal((raw.parse_errors as Array<{ seq: number }>)[0]?.seq, 3);
    const verified = await client.call("run.replay", { workspace_dir: ws, project_id: ids.project_id, run_id: runId, mode: "verified" });
    assert.deepEqual((verified.verification as { first_broken: { seq: number } }).first_broken.seq, 3);

    const runs = await client.call("run.list", { workspace_dir: ws });
    assert.deepEqual(
      (runs as unknown as Array<{ id: string }>).map((r) => r.id),
      [runId],
    );
  });

  it("keeps the index a cache: rebuilt from the files after deletion, synced incrementally", async () => {
    const rebuilt = await client.call("index.rebuild", { workspace_dir: ws });
    assert.deepEqual(rebuilt, { runs: 1, events: 3, parse_errors: 1 });
    assert.deepEqual(await client.call("index.sync", { workspace_dir: ws }), { runs: 0, events: 0, parse_errors: 0 });
    await client.call("run.create", { workspace_dir: ws, project_id: ids.project_id, agent_id: ids.agent_id });
    assert.deepEqual(await client.call("index.sync", { workspace_dir: ws }), { runs: 1, events: 1, parse_errors: 0 });
    const events = (await client.call("index.list_events", { workspace_dir: ws, order: "asc" })) as unknown as Array<{
      type: string;
      event: { event_hash: string };
    }>;
    assert.equal(events.length, 4);
    assert.match(events[0]!.event.event_hash, /^[0-9a-f]{64}$/);
    const errors = (await client.call("index.list_event_parse_errors", { workspace_dir: ws })) as unknown as Array<{ raw_line: string }>;
    assert.match(errors[0]!.raw_line, /evt_torn/);
    const doctor = await client.call("workspace.doctor", { workspace_dir: ws, rebuild_index: true });
    assert.deepEqual((doctor.index as { stats: unknown }).stats, { runs: 2, events: 4, event_parse_errors: 1 });
  });

  it("subscriptions backfill then stream live, and resume after the last ack across a restart", async () => {
    const sub = await client.call("events.subscribe", { subscription_id: "sub_ui", workspace_dir: ws, backfill_limit: 2 });
    assert.equal(sub.backfilled, 2);
    const created = await client.call("run.create", { workspace_dir: ws, project_id: ids.project_id, agent_id: ids.agent_id });
    await client.waitFor((m) => m.method === "events.notification" && (m.params?.event as { run_id: string }).run_id === created.run_id);
    const seen = notifications(client, "sub_ui");
    assert.equal(seen.length, 3, "two backfilled, one live, none twice");
    assert.equal((seen[2]!.params!.event as { type: string }).type, "run.started");
    assert.equal(seen[2]!.params!.project_id, ids.project_id);
    const acked = (seen[2]!.params!.event as { ts_monotonic_ms: number }).ts_monotonic_ms;
    await client.call("events.ack", { subscription_id: "sub_ui", last_ack_ts_monotonic_ms: acked });

    // Events while nobody listens, then a new server process: re-subscribing resumes after the ack.
    await server.kill();
    ({ server, client } = startServer());
    const missed = await client.call("run.create", { workspace_dir: ws, project_id: ids.project_id, agent_id: ids.agent_id });
    const resumed = await client.call("events.subscribe", { subscription_id: "sub_ui", workspace_dir: ws });
    assert.equal(resumed.resumed_after_ts, acked);
    const replayed = notifications(client, "sub_ui");
    assert.deepEqual(
      replayed.map((m) => (m.params!.event as { run_id: string }).run_id),
      [missed.run_id],
    );
  });

  it("keeps a second server process from writing to the same workspace", async () => {
    const second = startServer();
    try {
      const refused = await second.client.request("run.create", { workspace_dir: ws, project_id: ids.project_id, agent_id: ids.agent_id });
      assert.equal((refused.error?.data as { code: string }).code, "WORKSPACE_LOCKED");
      assert.equal((await second.client.call("workspace.validate", { workspace_dir: ws })).valid, true, "reads still work");
    } finally {
      await second.server.kill();
    }
  });

  it("recovers from a deleted index file", async () => {
    await server.kill();
    for (const suffix of ["", "-wal", "-shm"]) rmSync(path.join(ws, ".local", `index.sqlite${suffix}`), { force: true });
    ({ server, client } = startServer());
    assert.equal((await client.call("index.stats", { workspace_dir: ws })).runs, 0);
    assert.equal((await client.call("index.sync", { workspace_dir: ws })).runs, 4);
  });

  it("runs a command session: output as provider.raw events and files, the exit as run.failed, stop as run.stopped", async () => {
    const run = await client.call("run.create", { workspace_dir: ws, project_id: ids.project_id, agent_id: ids.agent_id, provider: "cmd" });
    const launched = await client.call("session.launch", {
      workspace_dir: ws,
      project_id: ids.project_id,
      run_id: run.run_id,
      argv: ["sh", "-c", "cat; echo to-err >&2; exit 3"],
      stdin_text: "from-stdin\n",
    });
    assert.equal(launched.status, "running");
    const collected = await client.call("session.collect", { workspace_dir: ws, session_ref: launched.session_ref });
    assert.equal(collected.status, "failed");
    assert.equal(collected.exit_code, 3);
    assert.deepEqual(collected.outputs, { "stdout.txt": "from-stdin\n", "stderr.txt": "to-err\n" });
    const replay = await client.call("run.replay", { workspace_dir: ws, project_id: ids.project_id, run_id: run.run_id, mode: "verified" });
    const types = (replay.events as Array<{ type: string }>).map((e) => e.type);
    assert.deepEqual(types.slice(0, 2), ["run.started", "run.executing"]);
    assert.equal(types.at(-1), "run.failed");
    assert.ok(types.filter((t) => t === "provider.raw").length >= 2);
    assert.equal((replay.verification as { ok: boolean }).ok, true);

    const sleeper = await client.call("run.create", {
      workspace_dir: ws,
      project_id: ids.project_id,
      agent_id: ids.agent_id,
      provider: "cmd",
    });
    const long = await client.call("session.launch", {
      workspace_dir: ws,
      project_id: ids.project_id,
      run_id: sleeper.run_id,
      argv: ["sleep", "30"],
    });
    await client.call("session.stop", { workspace_dir: ws, session_ref: long.session_ref });
    assert.equal((await client.call("session.collect", { workspace_dir: ws, session_ref: long.session_ref })).status, "stopped");
    const escape = await client.request("session.launch", {
      workspace_dir: ws,
      project_id: ids.project_id,
      run_id: sleeper.run_id,
      argv: ["true"],
      workdir_rel: "../..",
    });
    assert.equal((escape.error?.data as { code: string }).code, "POLICY_DENIED");
  });
});

describe("agentcompany agent sessions", () => {
  it("runs the switchyard adapter as a runtime thread, records its output, and reconciles a session a dead server left", async () => {
    const fake = await FakeModelServer.start();
    const dataDir = tempDir("company-data");
    const ws = path.join(tempDir("company"), "agents");
    let { server, client } = startServer(dataDir, modelEnv(fake));
    try {
      const ids = (await client.call("workspace.init", { workspace_dir: ws })) as { project_id: string; agent_id: string };
      const adapters = (await client.call("adapter.status", { workspace_dir: ws })) as unknown as Array<{
        name: string;
        available: boolean;
      }>;
      assert.equal(adapters.find((a) => a.name === "switchyard")?.available, true);
      const run = await client.call("run.create", { workspace_dir: ws, ...ids });
      fake.enqueue({ kind: "response", text: ["The plan ", "is ready."], usage: { input: 100, output: 20 } });
      const launched = await client.call("session.launch", {
        workspace_dir: ws,
        project_id: ids.project_id,
        run_id: run.run_id,
        prompt_text: "plan it",
      });
      assert.equal(launched.mode, "agent");
      const collected = await client.call("session.collect", { workspace_dir: ws, session_ref: launched.session_ref });
      assert.equal(collected.status, "ended");
      assert.equal((collected.outputs as Record<string, string>)["last_message.md"], "The plan is ready.");
      const replay = await client.call("run.replay", { workspace_dir: ws, project_id: ids.project_id, run_id: run.run_id });
      const events = replay.events as Array<{ type: string; payload: Record<string, unknown> }>;
      assert.deepEqual(
        events.map((e) => e.type),
        ["run.started", "run.executing", "usage.reported", "provider.raw", "run.ended"],
      );
      assert.equal(events.find((e) => e.type === "usage.reported")?.payload.total_tokens, 120);

      // A session still running when its server dies is failed, as orphaned, by the next one.
      const second = await client.call("run.create", { workspace_dir: ws, ...ids });
      fake.enqueue({ kind: "response", text: ["thinking"], holdOpen: true });
      const orphan = await client.call("session.launch", {
        workspace_dir: ws,
        project_id: ids.project_id,
        run_id: second.run_id,
        prompt_text: "take long",
      });
      server.child.kill("SIGKILL");
      await server.exited;
      ({ server, client } = startServer(dataDir, modelEnv(fake)));
      const polled = await client.call("session.poll", { workspace_dir: ws, session_ref: orphan.session_ref });
      assert.equal(polled.status, "failed");
      const runs = (await client.call("run.list", { workspace_dir: ws })) as unknown as Array<{ id: string; status: string }>;
      assert.equal(runs.find((r) => r.id === second.run_id)?.status, "failed");
      await server.kill();

      // The sessions' threads are ordinary runtime threads: an AppServer client sees them.
      const appServer = ServerProcess.spawn({ dataDir, env: modelEnv(fake) });
      const watcher = TestClient.overStdio(appServer.child);
      await watcher.initialize(FULL_CAPABILITIES);
      const list = await watcher.call("thread/list", {});
      assert.ok((list.data as Array<{ id: string }>).some((t) => t.id === launched.thread_id));
      await appServer.kill();
    } finally {
      await server.kill();
      await fake.close();
    }
  });
});

describe("agentcompany sessions watched live", () => {
  it("an AppServer client on the same server's WebSocket follows an agent session's thread as it streams", async () => {
    const fake = await FakeModelServer.start();
    const server = ServerProcess.spawn({
      command: "agentcompany",
      args: ["server:start", "--listen", "ws://127.0.0.1:0"],
      env: modelEnv(fake),
    });
    const client = TestClient.overStdio(server.child);
    try {
      const url = await server.websocketUrl();
      const ws = path.join(tempDir("company"), "live");
      const ids = (await client.call("workspace.init", { workspace_dir: ws })) as { project_id: string; agent_id: string };
      const run = await client.call("run.create", { workspace_dir: ws, ...ids });
      fake.enqueue({ kind: "response", text: ["slow ", "and ", "steady"], chunkDelayMs: 150 });
      const launched = await client.call("session.launch", {
        workspace_dir: ws,
        project_id: ids.project_id,
        run_id: run.run_id,
        prompt_text: "go",
      });
      const watcher = await TestClient.overWebSocket(url);
      await watcher.initialize(FULL_CAPABILITIES);
      await watcher.call("thread/subscribe", { threadId: launched.thread_id, afterSeq: 0 });
      await watcher.waitFor((m) => m.method === "item/agentMessage/delta" && m.params?.delta === "steady");
      assert.equal((await client.call("session.collect", { workspace_dir: ws, session_ref: launched.session_ref })).status, "ended");
      watcher.close();
      const adapters = (await client.call("adapter.status", {})) as unknown as Array<{ name: string; available: boolean; reason?: string }>;
      const gemini = adapters.find((a) => a.name === "gemini_cli");
      assert.equal(gemini?.available, false);
      assert.match(String(gemini?.reason), /no backend/);
    } finally {
      await server.kill();
      await fake.close();
    }
  });
});

describe("agentcompany session limits and linked repositories", () => {
  it("runs a command in a linked repository, and stops an agent session past its token budget", async () => {
    const fake = await FakeModelServer.start();
    const { server, client } = startServer(undefined, modelEnv(fake));
    try {
      const ws = path.join(tempDir("company"), "limits");
      const repo = tempDir("repo");
      writeFileSync(path.join(repo, "README.md"), "the repo");
      const ids = (await client.call("workspace.init", { workspace_dir: ws })) as { project_id: string; agent_id: string };
      writeFileSync(path.join(ws, ".local", "machine.yaml"), `repo_roots:\n  app: ${repo}\n`);
      const cmd = await client.call("run.create", { workspace_dir: ws, ...ids, provider: "cmd" });
      const inRepo = await client.call("session.launch", {
        workspace_dir: ws,
        project_id: ids.project_id,
        run_id: cmd.run_id,
        repo_id: "app",
        argv: ["cat", "README.md"],
      });
      assert.equal(
        ((await client.call("session.collect", { workspace_dir: ws, session_ref: inRepo.session_ref })).outputs as Record<string, string>)[
          "stdout.txt"
        ],
        "the repo",
      );
      const unknown = await client.request("session.launch", {
        workspace_dir: ws,
        project_id: ids.project_id,
        run_id: cmd.run_id,
        repo_id: "nope",
        argv: ["true"],
      });
      assert.equal((unknown.error?.data as { code: string }).code, "POLICY_DENIED");

      const run = await client.call("run.create", { workspace_dir: ws, ...ids });
      fake.enqueue(
        {
          kind: "response",
          toolCalls: [{ id: "call_ls", name: "list_files", arguments: { path: "." } }],
          usage: { input: 100, output: 20 },
        },
        { kind: "response", text: "never reached", chunkDelayMs: 200 },
      );
      const launched = await client.call("session.launch", {
        workspace_dir: ws,
        project_id: ids.project_id,
        run_id: run.run_id,
        prompt_text: "look around",
        budget: { hard_tokens: 50 },
      });
      const collected = await client.call("session.collect", { workspace_dir: ws, session_ref: launched.session_ref });
      assert.equal(collected.status, "stopped");
      const replay = await client.call("run.replay", { workspace_dir: ws, project_id: ids.project_id, run_id: run.run_id });
      const types = (replay.events as Array<{ type: string }>).map((e) => e.type);
      assert.ok(types.includes("budget.exceeded"), types.join(", "));
      assert.equal(types.at(-1), "run.stopped");
    } finally {
      await server.kill();
      await fake.close();
    }
  });
});

const CLAUDE = fileURLToPath(new URL("../../../test/agents/node_modules/.bin/claude", import.meta.url));
const noClaude = existsSync(CLAUDE) ? false : `Claude Code is not installed (${CLAUDE}); npm test installs it`;

describe("agentcompany with a real external agent", { skip: noClaude }, () => {
  it("runs a claude_cli session on the real Claude Code (offline, against the fake model server)", async () => {
    const fake = await FakeModelServer.start();
    const home = tempDir("claude-home");
    const { server, client } = startServer(undefined, {
      ...modelEnv(fake, "anthropic"),
      HOME: home,
      CLAUDE_CONFIG_DIR: path.join(home, ".claude"),
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
      DISABLE_AUTOUPDATER: "1",
    });
    try {
      const ws = path.join(tempDir("company"), "claude");
      const ids = (await client.call("workspace.init", { workspace_dir: ws })) as { project_id: string; agent_id: string };
      writeFileSync(path.join(ws, ".local", "machine.yaml"), `provider_bins:\n  claude: ${CLAUDE}\n`);
      const run = await client.call("run.create", { workspace_dir: ws, ...ids, provider: "claude_cli" });
      fake.enqueue({ kind: "response", text: ["Claude ", "was here."] });
      const launched = await client.call("session.launch", {
        workspace_dir: ws,
        project_id: ids.project_id,
        run_id: run.run_id,
        prompt_text: "say hi",
      });
      const collected = await client.call("session.collect", { workspace_dir: ws, session_ref: launched.session_ref, wait_ms: 60_000 });
      assert.equal(collected.status, "ended", JSON.stringify(collected));
      assert.equal((collected.outputs as Record<string, string>)["last_message.md"], "Claude was here.");
    } finally {
      await server.kill();
      await fake.close();
    }
  });
});

describe("a run's log in the server's store", () => {
  it("is kept beside events.jsonl: a file rewritten with a valid chain of its own is caught by replay verified", async () => {
    const { server, client } = startServer();
    try {
      const ws = path.join(tempDir("company"), "forged");
      const ids = (await client.call("workspace.init", { workspace_dir: ws })) as { project_id: string; agent_id: string };
      const created = await client.call("run.create", { workspace_dir: ws, ...ids });
      const replay = () =>
        client.call("run.replay", { workspace_dir: ws, project_id: ids.project_id, run_id: created.run_id, mode: "verified" });
      assert.deepEqual((await replay()).verification, { ok: true, checked: 1 });

      // A forger rewrites the first event and computes its hash again: the file's chain holds.
      const file = path.join(ws, String(created.events_relpath));
      const event = JSON.parse(readFileSync(file, "utf8").trim()) as Parameters<typeof hashOf>[0];
      const forged = { ...event, payload: { ...event.payload, provider: "forged" } };
      writeFileSync(file, `${JSON.stringify({ ...forged, event_hash: hashOf(forged) })}\n`);
      const verification = (await replay()).verification as { ok: boolean; first_broken?: { seq: number; reason: string } };
      assert.equal(verification.ok, false);
      assert.equal(verification.first_broken?.seq, 1);
      assert.match(verification.first_broken!.reason, /store's copy differs from events\.jsonl/);
    } finally {
      await server.kill();
    }
  });
});
