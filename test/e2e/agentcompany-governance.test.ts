// The AgentCompany golden path over a real `ac server:start` process: init → run → a command
// session with live notifications → collect → a memory delta reviewed → milestone approval →
// snapshots; and crash consistency: a server killed during appends leaves a log that verifies
// up to its torn line and an index that rebuilds to the same counts.
import assert from "node:assert/strict";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { describe, it } from "node:test";
import { ServerProcess, tempDir } from "../support/server-process.js";
import { TestClient } from "../support/test-client.js";

const AC = path.resolve(path.dirname(new URL(import.meta.url).pathname), "../../ac.js");

function startAc(): { server: ServerProcess; client: TestClient } {
  const server = ServerProcess.spawn({ command: "agentcompany", args: ["server:start"] });
  return { server, client: TestClient.overStdio(server.child) };
}

const errorCode = (m: { error?: { data?: unknown } }): string | undefined => (m.error?.data as { code?: string } | undefined)?.code;

describe("agentcompany golden path", () => {
  it("init → run → command session with live events → collect → memory review → milestone → snapshots", async () => {
    assert.ok(existsSync(AC), "the ac command is built");
    const ws = path.join(tempDir("golden"), "ws");
    const { server, client } = startAc();
    try {
      const ids = (await client.call("workspace.init", { workspace_dir: ws, company_name: "Golden" })) as {
        project_id: string;
        agent_id: string;
        team_id: string;
      };
      await client.call("events.subscribe", { subscription_id: "sub_all", workspace_dir: ws, project_id: ids.project_id });
      const run = await client.call("run.create", {
        workspace_dir: ws,
        project_id: ids.project_id,
        agent_id: ids.agent_id,
        provider: "cmd",
      });
      const session = await client.call("session.launch", {
        workspace_dir: ws,
        project_id: ids.project_id,
        run_id: run.run_id,
        argv: ["sh", "-c", "echo building; echo done"],
      });
      const collected = await client.call("session.collect", { workspace_dir: ws, session_ref: session.session_ref });
      assert.equal(collected.status, "ended");
      await client.waitFor((m) => m.method === "events.notification" && (m.params?.event as { type: string }).type === "run.ended");
      const live = client.received.filter((m) => m.method === "events.notification").map((m) => (m.params!.event as { type: string }).type);
      assert.equal(live[0], "run.started");
      assert.equal(live[1], "run.executing");
      assert.equal(live.at(-1), "run.ended");
      assert.ok(live.includes("provider.raw"));

      // A memory delta: a secret is refused; a worker may not approve; a director's approval applies it.
      const secret = await client.request("memory.propose_delta", {
        workspace_dir: ws,
        project_id: ids.project_id,
        title: "Credentials",
        scope_kind: "project_memory",
        under_heading: "Decisions",
        insert_lines: ["- deploy key: AKIAABCDEFGHIJKLMNOP"],
        produced_by: ids.agent_id,
      });
      assert.equal(secret.error?.code, -32000);
      assert.equal(errorCode(secret), "SECRET_DETECTED");
      const proposed = await client.call("memory.propose_delta", {
        workspace_dir: ws,
        project_id: ids.project_id,
        title: "Use pnpm",
        scope_kind: "project_memory",
        under_heading: "Decisions",
        insert_lines: ["- We build with pnpm."],
        rationale: "The lockfile is pnpm's.",
        produced_by: ids.agent_id,
        run_id: run.run_id,
      });
      const patch = readFileSync(path.join(ws, String(proposed.patch_file)), "utf8");
      assert.match(patch, /^\+- We build with pnpm\.$/m);
      let inbox = await client.call("inbox.snapshot", { workspace_dir: ws });
      assert.deepEqual(
        (inbox.pending as Array<{ artifact_id: string }>).map((p) => p.artifact_id),
        [proposed.artifact_id],
      );
      const denied = await client.request("memory.approve_delta", {
        workspace_dir: ws,
        project_id: ids.project_id,
        artifact_id: proposed.artifact_id,
        actor_id: ids.agent_id,
        actor_role: "worker",
      });
      assert.equal(errorCode(denied), "POLICY_DENIED");
      const approved = await client.call("memory.approve_delta", {
        workspace_dir: ws,
        project_id: ids.project_id,
        artifact_id: proposed.artifact_id,
        actor_id: "dir_1",
        actor_role: "director",
      });
      assert.equal(approved.applied, true);
      const memory = readFileSync(path.join(ws, "work", "projects", ids.project_id, "memory.md"), "utf8");
      assert.match(memory, /## Decisions\n\n- We build with pnpm\.\n\n## Links/);
      await client.waitFor((m) => m.method === "events.notification" && (m.params?.event as { type: string }).type === "approval.decided");

      // A coding milestone needs its evidence.
      const artifacts = path.join(ws, "work", "projects", ids.project_id, "artifacts");
      writeFileSync(
        path.join(ws, "work", "projects", ids.project_id, "tasks", "task_1.md"),
        "---\nid: task_1\ntitle: Build\nassignee: " +
          ids.agent_id +
          "\nmilestones:\n  - id: ms_1\n    title: Compiles\n    kind: coding\n    status: in_progress\n---\n# Build\n",
      );
      writeFileSync(
        path.join(artifacts, "art_report.md"),
        "---\ntype: milestone_report\nvisibility: team\nproduced_by: " +
          ids.agent_id +
          "\ntask_id: task_1\nmilestone_id: ms_1\nevidence_artifacts: [art_patch]\ntests_artifacts: [art_tests]\n---\nDone.\n",
      );
      const missing = await client.request("milestone.approve", {
        workspace_dir: ws,
        project_id: ids.project_id,
        task_id: "task_1",
        milestone_id: "ms_1",
        report_artifact_id: "art_report",
        actor_role: "manager",
        actor_id: "mgr_1",
      });
      assert.equal(errorCode(missing), "EVIDENCE_MISSING");
      writeFileSync(path.join(artifacts, "art_patch.patch"), "--- a\n+++ b\n");
      writeFileSync(path.join(artifacts, "art_tests.txt"), "12 passed\n");
      const milestone = await client.call("milestone.approve", {
        workspace_dir: ws,
        project_id: ids.project_id,
        task_id: "task_1",
        milestone_id: "ms_1",
        report_artifact_id: "art_report",
        actor_role: "manager",
        actor_id: "mgr_1",
      });
      assert.equal(milestone.status, "done");
      assert.match(readFileSync(path.join(ws, "work", "projects", ids.project_id, "tasks", "task_1.md"), "utf8"), /status: done/);

      // Visibility: a worker of another team may not read the team's report.
      const foreign = await client.request("artifact.read", {
        workspace_dir: ws,
        project_id: ids.project_id,
        artifact_id: "art_report",
        actor_id: "agent_x",
        actor_role: "worker",
        team_id: "team_other",
      });
      assert.equal(errorCode(foreign), "POLICY_DENIED");
      assert.equal(
        (await client.call("artifact.read", { workspace_dir: ws, project_id: ids.project_id, artifact_id: "art_report" })).body,
        "Done.\n",
      );

      assert.equal(
        (await client.call("agent.record_mistake", { workspace_dir: ws, agent_id: ids.agent_id, mistake_key: "skipped-tests" })).count,
        1,
      );
      assert.equal(
        (await client.call("agent.record_mistake", { workspace_dir: ws, agent_id: ids.agent_id, mistake_key: "skipped-tests" })).count,
        2,
      );
      const context = await client.call("agent.refresh_context", { workspace_dir: ws, agent_id: ids.agent_id });
      assert.deepEqual([context.tasks, context.runs], [1, 1]);

      inbox = await client.call("inbox.snapshot", { workspace_dir: ws });
      assert.deepEqual(inbox.pending, []);
      assert.deepEqual((inbox.recent_decisions as Array<{ subject_kind: string }>).map((d) => d.subject_kind).sort(), [
        "memory_delta",
        "milestone",
      ]);
      const monitor = await client.call("monitor.snapshot", { workspace_dir: ws });
      const row = (monitor.rows as Array<Record<string, unknown>>)[0]!;
      assert.equal(row.run_id, run.run_id);
      assert.equal(row.live_status, "ended");
      assert.equal((row.last_event as { type: string }).type, "approval.decided");
      assert.equal(row.policy_decision_count, 1);
      const ui = await client.call("ui.snapshot", { workspace_dir: ws });
      assert.deepEqual(
        (ui.colleagues as Array<{ agent_id: string; total_runs: number; status: string }>).map((c) => [c.agent_id, c.total_runs, c.status]),
        [[ids.agent_id, 1, "idle"]],
      );
      const verified = await client.call("run.replay", {
        workspace_dir: ws,
        project_id: ids.project_id,
        run_id: run.run_id,
        mode: "verified",
      });
      assert.equal((verified.verification as { ok: boolean }).ok, true, "governance events extend the same chain");
    } finally {
      await server.kill();
    }
  });
});

describe("agentcompany crash consistency", () => {
  it("a server killed during appends leaves a chain that verifies up to the torn line and an index that rebuilds to the same counts", async () => {
    const ws = path.join(tempDir("crash"), "ws");
    let { server, client } = startAc();
    const ids = (await client.call("workspace.init", { workspace_dir: ws })) as { project_id: string; agent_id: string };
    const run = await client.call("run.create", { workspace_dir: ws, project_id: ids.project_id, agent_id: ids.agent_id, provider: "cmd" });
    await client.call("session.launch", {
      workspace_dir: ws,
      project_id: ids.project_id,
      run_id: run.run_id,
      argv: ["sh", "-c", "i=0; while true; do i=$((i+1)); echo line $i; done"],
    });
    await client.call("events.subscribe", { subscription_id: "s", workspace_dir: ws, run_id: run.run_id, event_types: ["provider.raw"] });
    // Kill it while it appends (after a few hundred events).
    await client.waitFor(() => client.received.filter((m) => m.method === "events.notification").length >= 300, 30_000);
    server.child.kill("SIGKILL");
    await server.exited;
    // A crash mid-write may leave a torn last line; make sure one is there.
    const file = path.join(ws, "work", "projects", ids.project_id, "runs", String(run.run_id), "events.jsonl");
    writeFileSync(file, '{"schema_version":1,"event_id":"evt_cut', { flag: "a" });

    ({ server, client } = startAc());
    try {
      const replay = await client.call("run.replay", {
        workspace_dir: ws,
        project_id: ids.project_id,
        run_id: run.run_id,
        mode: "verified",
      });
      const events = replay.events as unknown[];
      const errors = replay.parse_errors as Array<{ seq: number }>;
      const verification = replay.verification as { ok: boolean; checked: number; first_broken?: { seq: number } };
      assert.ok(events.length >= 300);
      assert.equal(errors.length, 1, "the torn line is the one parse error");
      assert.equal(verification.checked, events.length, "every event before the torn line verifies");
      assert.equal(verification.first_broken?.seq, errors[0]!.seq);
      const rebuilt = await client.call("index.rebuild", { workspace_dir: ws });
      assert.equal(rebuilt.events, events.length);
      assert.equal(rebuilt.parse_errors, 1);
      // The session the dead server left is reconciled, and its failure extends the log past the torn line.
      const sessions = (await client.call("session.list", { workspace_dir: ws })) as unknown as Array<{ status: string }>;
      assert.equal(sessions[0]?.status, "failed");
    } finally {
      await server.kill();
    }
  });
});
