// The backend seam end to end, for every backend type alike: choosing a backend (flag, config
// file, thread configuration), validating the choice, reporting availability, failing clearly
// when an agent cannot start, and reaping agent processes a killed server left behind.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { FakeModelServer } from "../support/fake-model-server.js";
import { startHarness, text } from "../support/harness.js";
import { ServerProcess, tempDir } from "../support/server-process.js";

const MISSING = "/nonexistent/switchyard-test-agent";

function dataDirWith(config: unknown): string {
  const dir = tempDir("data");
  fs.writeFileSync(path.join(dir, "config.json"), JSON.stringify(config));
  return dir;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe("choosing a backend", () => {
  let fake: FakeModelServer;
  before(async () => {
    fake = await FakeModelServer.start();
  });
  after(() => fake.close());

  it("refuses an unknown --backend with a clear message", async () => {
    const server = ServerProcess.spawn({ args: ["--backend", "gpt-in-a-box"] });
    const { code } = await server.exited;
    assert.notEqual(code, 0);
    assert.match(server.stderr, /--backend gpt-in-a-box: expected builtin, claude-code, codex or acp:<command line>/);
  });

  it("refuses an ACP backend without a command", async () => {
    const server = ServerProcess.spawn({ args: ["--backend", "acp:"] });
    const { code } = await server.exited;
    assert.notEqual(code, 0);
    assert.match(server.stderr, /name the ACP agent's command/);
  });

  it("reports an invalid backend in the config file by its path", async () => {
    const server = ServerProcess.spawn({ dataDir: dataDirWith({ backend: { type: "acp" } }) });
    const { code } = await server.exited;
    assert.notEqual(code, 0);
    assert.match(server.stderr, /config\.json: backend\.command: expected string/);
  });

  it("refuses an invalid backend in thread/start with -32602 and the issues", async () => {
    const h = await startHarness({ fake });
    try {
      const reply = await h.client.request("thread/start", { configuration: { backend: { type: "acp", command: "" } } });
      assert.equal(reply.error?.code, -32602);
      assert.match(JSON.stringify(reply.error?.data), /backend/);
    } finally {
      await h.close();
    }
  });

  it("lists every backend with its availability", async () => {
    const h = await startHarness({ fake, args: ["--backend", `acp:${MISSING} --flag`] });
    try {
      const { data } = (await h.client.call("backend/list", {})) as { data: Array<{ type: string; available: boolean; problem?: string }> };
      assert.deepEqual(data.map((b) => b.type).sort(), ["acp", "builtin", "claude-code", "codex"]);
      assert.equal(data.find((b) => b.type === "builtin")?.available, true);
      const acp = data.find((b) => b.type === "acp");
      assert.equal(acp?.available, false, "the default ACP agent's command does not exist");
      assert.ok(acp?.problem, "says why");
    } finally {
      await h.close();
    }
  });

  for (const type of ["claude-code", "codex", "acp"] as const) {
    it(`${type}: a missing agent binary fails the turn with backendNotFound, and the server keeps serving`, {}, async () => {
      const h = await startHarness({ fake });
      try {
        const threadId = await h.startThread({ configuration: { backend: { type, command: MISSING } } });
        const started = await h.client.call("turn/start", { threadId, input: text("hello") });
        const end = await h.client.turnEnd(threadId, (started.turn as { id: string }).id);
        assert.equal(end.method, "turn/failed");
        const error = (end.params as { error: { code: string; message: string } }).error;
        assert.equal(error.code, "backendNotFound");
        assert.match(error.message, /not found/);
        // The same server still runs built-in turns.
        fake.enqueue({ kind: "response", text: "still here" });
        const builtin = await h.startThread();
        const next = await h.client.call("turn/start", { threadId: builtin, input: text("hi") });
        assert.equal((await h.client.turnEnd(builtin, (next.turn as { id: string }).id)).method, "turn/completed");
      } finally {
        await h.close();
      }
    });
  }

  it("a thread's backend survives a restart and shows in thread/read", async () => {
    const dataDir = tempDir("data");
    const backend = { type: "acp", command: MISSING, args: ["--x"], env: { A: "1" } };
    const first = await startHarness({ fake, dataDir });
    const threadId = await first.startThread({ configuration: { backend } });
    await first.close();
    const second = await startHarness({ fake, dataDir });
    try {
      const { thread } = (await second.client.call("thread/read", { threadId })) as { thread: { configuration?: { backend?: unknown } } };
      assert.deepEqual(thread.configuration?.backend, backend);
    } finally {
      await second.close();
    }
  });
});

describe("agent processes left by a killed server", () => {
  it("are reaped at the next start; unrelated processes are not", async () => {
    const dataDir = tempDir("data");
    const agents = path.join(dataDir, "agents");
    fs.mkdirSync(agents, { recursive: true });
    // Two stand-in agents in their own process groups, registered by an owner that is gone.
    const orphan = spawn("sleep", ["300"], { detached: true, stdio: "ignore" });
    const unrelated = spawn("sleep", ["300"], { detached: true, stdio: "ignore" });
    const deadOwner = spawn(process.execPath, ["-e", ""]);
    await new Promise((resolve) => deadOwner.once("exit", resolve));
    try {
      fs.writeFileSync(
        path.join(agents, `${orphan.pid}.json`),
        JSON.stringify({ pid: orphan.pid, ownerPid: deadOwner.pid, command: "sleep" }),
      );
      // A registration whose pid now runs something else is only forgotten.
      fs.writeFileSync(
        path.join(agents, `${unrelated.pid}.json`),
        JSON.stringify({ pid: unrelated.pid, ownerPid: deadOwner.pid, command: "claude" }),
      );
      const orphanExit = new Promise((resolve) => orphan.once("exit", resolve));
      const server = ServerProcess.spawn({ dataDir });
      try {
        const reaped = await server.waitForLog((line) => line.msg === "reaped an agent process left by a previous server");
        assert.equal(reaped.pid, orphan.pid);
        await server.waitForLog((line) => line.msg === "ready");
        await orphanExit;
        assert.equal(isAlive(unrelated.pid!), true);
        assert.deepEqual(fs.readdirSync(agents), []);
      } finally {
        await server.kill();
      }
    } finally {
      unrelated.kill("SIGKILL");
      orphan.kill("SIGKILL");
    }
  });
});
