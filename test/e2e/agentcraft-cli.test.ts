// The AgentCraft CLI against a real daemon on a temporary home: every command family, the
// output formats, error exits, the socket's permissions, a stale socket and two daemons.
import assert from "node:assert/strict";
import { existsSync, lstatSync, mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { pidAlive } from "../../src/pid.js";
import { AgentCraftHome, eventually, template } from "../support/agentcraft.js";
import { tempDir } from "../support/server-process.js";

describe("agentcraft daemon", () => {
  it("says how to start it when it is not running, and exits non-zero", async () => {
    const home = new AgentCraftHome();
    const run = await home.cli("agent", "list");
    assert.equal(run.code, 1);
    assert.match(run.stderr, /daemon is not running .* agentcraft daemon start/);
  });

  it("starts detached with an owner-only socket, refuses a second daemon, recovers a stale socket, and stops", async () => {
    const home = new AgentCraftHome();
    const started = await home.cli("daemon", "start");
    assert.equal(started.code, 0, started.stderr);
    const printed = /daemon started \(pid (\d+)/.exec(started.stdout);
    assert.ok(printed, started.stdout);
    assert.equal(statSync(home.socket).mode & 0o777, 0o600);
    // Written by the time `start` returns.
    const pid = Number(readFileSync(path.join(home.home, "daemon.pid"), "utf8"));
    assert.equal(pid, Number(printed[1]));

    const second = await home.cli("daemon", "start");
    assert.equal(second.code, 1);
    assert.match(second.stdout, /already running/);

    const status = await home.cli("daemon", "status", "-f", "json");
    assert.equal(status.code, 0);
    assert.equal(JSON.parse(status.stdout).version, "0.1.0");

    // A daemon killed outright leaves its socket file behind: the next one takes it over.
    process.kill(pid, "SIGKILL");
    await eventually(async () => (pidAlive(pid) ? undefined : true), "the daemon to die");
    assert.ok(lstatSync(home.socket).isSocket());
    const again = await home.cli("daemon", "start");
    assert.equal(again.code, 0, again.stderr);

    const stopped = await home.cli("daemon", "stop");
    assert.equal(stopped.code, 0);
    assert.ok(!existsSync(home.socket), "the socket is removed");
    assert.ok(!existsSync(path.join(home.home, "daemon.pid")), "daemon.pid is removed");
  });
});

describe("agentcraft templates, components and instances", () => {
  const home = new AgentCraftHome();
  before(async () => {
    home.config("skills", { name: "code-review", description: "Reviews code", content: "Check every diff for bugs." });
    home.config("prompts", { name: "system-reviewer", content: "You are a careful reviewer." });
    home.config("workflows", { name: "standard", content: "Plan, do, check." });
    home.config("mcp", { name: "filesystem", command: "mcp-fs", args: ["--root", "."] });
    home.config(
      "templates",
      template("reviewer", { domainContext: { skills: ["code-review"], prompts: ["system-reviewer"], workflow: "standard" } }),
    );
    home.config(
      "templates",
      template("claude-reviewer", { backend: { type: "claude-code" }, domainContext: { mcpServers: ["filesystem"] } }),
    );
    await home.startDaemon();
  });
  after(() => home.stop());

  it("lists and shows templates in every format", async () => {
    const table = await home.cli("template", "list");
    assert.equal(table.code, 0, table.stderr);
    assert.match(table.stdout, /^NAME\s+VERSION\s+BACKEND/m);
    assert.match(table.stdout, /reviewer\s+1\.0\.0\s+switchyard/);
    const quiet = await home.cli("tpl", "list", "-f", "quiet");
    assert.deepEqual(quiet.stdout.trim().split("\n").sort(), ["claude-reviewer", "reviewer"]);
    const json = JSON.parse((await home.cli("template", "show", "reviewer", "-f", "json")).stdout);
    assert.deepEqual(json.domainContext.skills, ["code-review"]);
    const missing = await home.cli("template", "show", "nope");
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /TEMPLATE_NOT_FOUND \(-32001\): Template "nope" is not loaded/);
  });

  it("validates a template file with every problem and its path, and loads a valid one", async () => {
    const bad = home.file("bad.json", { name: "", version: "one", backend: { type: "vim" } });
    const validated = await home.cli("template", "validate", bad);
    assert.equal(validated.code, 1);
    assert.match(validated.stdout, /name: /);
    assert.match(validated.stdout, /version: a semantic version/);
    assert.match(validated.stdout, /backend\.type: /);
    const refused = await home.cli("template", "load", bad);
    assert.match(refused.stderr, /CONFIG_VALIDATION \(-32002\)/);

    const good = home.file("writer.json", template("writer"));
    assert.equal((await home.cli("template", "validate", good)).code, 0);
    const loaded = await home.cli("template", "load", good);
    assert.match(loaded.stdout, /loaded template writer 1\.0\.0/);
    assert.ok(existsSync(path.join(home.home, "configs", "templates", "writer.json")), "kept for the next start");
    const client = await home.client();
    assert.deepEqual(await client.call("template.unload", { name: "writer" }), { success: true });
    client.close();
  });

  it("lists and shows domain components", async () => {
    assert.match((await home.cli("skill", "list")).stdout, /code-review\s+Reviews code/);
    assert.equal(
      JSON.parse((await home.cli("prompt", "show", "system-reviewer", "-f", "json")).stdout).content,
      "You are a careful reviewer.",
    );
    assert.equal((await home.cli("mcp", "list", "-f", "quiet")).stdout.trim(), "filesystem");
    assert.equal((await home.cli("workflow", "list", "-f", "quiet")).stdout.trim(), "standard");
    const missing = await home.cli("skill", "show", "nope");
    assert.match(missing.stderr, /CONFIG_NOT_FOUND \(-32000\)/);
  });

  it("creates an instance with its context files, lists it, and destroys it", async () => {
    const created = await home.cli("agent", "create", "rev", "-t", "reviewer", "-f", "json");
    assert.equal(created.code, 0, created.stderr);
    const meta = JSON.parse(created.stdout);
    assert.equal(meta.status, "created");
    assert.equal(meta.backendType, "switchyard");
    assert.equal(meta.launchMode, "acp-background");
    const dir = path.join(home.home, "instances", "rev");
    const agents = readFileSync(path.join(dir, "AGENTS.md"), "utf8");
    assert.match(agents, /You are a careful reviewer\./);
    assert.match(agents, /Check every diff for bugs\./);
    assert.match(agents, /Plan, do, check\./);
    assert.equal(home.meta("rev").name, "rev");

    const claude = await home.cli("agent", "create", "crev", "-t", "claude-reviewer");
    assert.equal(claude.code, 0, claude.stderr);
    const crev = path.join(home.home, "instances", "crev");
    assert.ok(existsSync(path.join(crev, "CLAUDE.md")));
    assert.deepEqual(JSON.parse(readFileSync(path.join(crev, ".claude", "mcp.json"), "utf8")).mcpServers.filesystem.args, ["--root", "."]);
    assert.deepEqual(JSON.parse(readFileSync(path.join(crev, ".claude", "settings.local.json"), "utf8")).permissions.allow, [
      "mcp__filesystem",
    ]);

    const list = await home.cli("agent", "list");
    assert.match(list.stdout, /^NAME\s+STATUS\s+TEMPLATENAME/m);
    assert.match(list.stdout, /rev\s+created\s+reviewer\s+switchyard\s+acp-background/);
    const dup = await home.cli("agent", "create", "rev", "-t", "reviewer");
    assert.match(dup.stderr, /WORKSPACE_INIT \(-32005\)/);

    assert.equal((await home.cli("agent", "destroy", "rev")).code, 0);
    assert.ok(!existsSync(dir));
    const gone = await home.cli("agent", "status", "rev");
    assert.equal(gone.code, 1);
    assert.match(gone.stderr, /AGENT_NOT_FOUND \(-32003\)/);
  });

  it("refuses a template that names a missing component", async () => {
    const client = await home.client();
    try {
      await client.call("template.load", {
        filePath: home.file("broken.json", template("broken", { domainContext: { skills: ["missing-skill"] } })),
      });
      await assert.rejects(
        client.call("agent.create", { name: "b1", template: "broken" }),
        (error: { code: number; data: { errorCode: string; context: { name: string } } }) => {
          assert.equal(error.code, -32006);
          assert.equal(error.data.errorCode, "COMPONENT_REFERENCE");
          assert.equal(error.data.context.name, "missing-skill");
          return true;
        },
      );
      assert.ok(!existsSync(path.join(home.home, "instances", "b1")), "nothing is left behind");
    } finally {
      client.close();
    }
  });

  it("uses a workDir: conflict error, append, a link under instances/, and a destroy that keeps the user's files", async () => {
    const workDir = tempDir("workdir");
    writeFileSync(path.join(workDir, "notes.txt"), "mine");
    writeFileSync(path.join(workDir, "AGENTS.md"), "# My own rules\n");
    const refused = await home.cli("agent", "create", "wd", "-t", "reviewer", "--work-dir", workDir);
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /WORKSPACE_INIT .* not empty/);

    const created = await home.cli("agent", "create", "wd", "-t", "reviewer", "--work-dir", workDir, "--append");
    assert.equal(created.code, 0, created.stderr);
    assert.ok(lstatSync(path.join(home.home, "instances", "wd")).isSymbolicLink());
    const agents = readFileSync(path.join(workDir, "AGENTS.md"), "utf8");
    assert.ok(agents.startsWith("# My own rules") && agents.includes("Check every diff"), "appended to the user's file");
    assert.ok(existsSync(path.join(workDir, "prompts", "system.md")));

    assert.equal((await home.cli("agent", "destroy", "wd")).code, 0);
    assert.ok(!existsSync(path.join(home.home, "instances", "wd")), "the link is gone");
    assert.ok(!existsSync(path.join(workDir, ".agentcraft.json")));
    assert.ok(!existsSync(path.join(workDir, "prompts", "system.md")), "what AgentCraft created is gone");
    assert.equal(readFileSync(path.join(workDir, "notes.txt"), "utf8"), "mine");
    assert.ok(existsSync(path.join(workDir, "AGENTS.md")), "the user's file stays");
  });

  it("reports a corrupted instance as INSTANCE_CORRUPTED, keeps serving, and destroys it with --force", async () => {
    assert.equal((await home.cli("agent", "create", "bad", "-t", "reviewer")).code, 0);
    writeFileSync(path.join(home.home, "instances", "bad", ".agentcraft.json"), "{ not json");
    const status = await home.cli("agent", "status", "bad");
    assert.equal(status.code, 1);
    assert.match(status.stderr, /INSTANCE_CORRUPTED \(-32007\)/);
    assert.equal((await home.cli("agent", "list")).code, 0, "the daemon still serves");
    assert.match((await home.cli("agent", "destroy", "bad")).stderr, /INSTANCE_CORRUPTED/);
    assert.equal((await home.cli("agent", "destroy", "bad", "--force")).code, 0);
  });

  it("resolves, attaches a real process, marks it crashed when it dies without a detach, and detaches", async () => {
    const resolved = JSON.parse((await home.cli("agent", "resolve", "ext", "-t", "reviewer", "-f", "json")).stdout);
    assert.equal(resolved.created, true);
    assert.equal(resolved.command, process.execPath);
    assert.ok(resolved.args.includes("acp"));
    assert.equal(resolved.workspaceDir, path.join(home.home, "instances", "ext"));

    const { spawn } = await import("node:child_process");
    const sleeper = spawn("sleep", ["60"]);
    const exited = new Promise((resolve) => sleeper.once("exit", resolve));
    const attached = await home.cli("agent", "attach", "ext", "--pid", String(sleeper.pid), "--metadata", "client=unity");
    assert.equal(attached.code, 0, attached.stderr);
    const meta = home.meta("ext");
    assert.equal(meta.processOwnership, "external");
    assert.deepEqual(meta.metadata, { client: "unity" });
    assert.match((await home.cli("agent", "attach", "ext", "--pid", String(process.pid))).stderr, /AGENT_ALREADY_ATTACHED \(-32009\)/);

    sleeper.kill("SIGKILL");
    await exited;
    const client = await home.client();
    try {
      await home.daemon!.waitForLog((l) => l.msg === "an attached agent's process died without a detach");
      assert.equal((await client.call("agent.status", { name: "ext" })).status, "crashed");
      // The client comes back to detach the crashed one; a second detach has nothing to detach.
      assert.deepEqual(await client.call("agent.detach", { name: "ext" }), { ok: true, workspaceCleaned: false });
      await assert.rejects(client.call("agent.detach", { name: "ext" }), { code: -32010 });
      await client.call("agent.attach", { name: "ext", pid: process.pid });
      assert.deepEqual(await client.call("agent.detach", { name: "ext" }), { ok: true, workspaceCleaned: false });
      assert.equal((await client.call("agent.status", { name: "ext" })).status, "stopped");
    } finally {
      client.close();
    }
  });

  it("answers invalid params with -32602 and the issues, unknown methods with -32601", async () => {
    const client = await home.client();
    try {
      await assert.rejects(
        client.call("agent.create", { name: "../escape", template: "reviewer" }),
        (error: { code: number; data: { issues: unknown[] } }) => {
          assert.equal(error.code, -32602);
          assert.ok(error.data.issues.length > 0);
          return true;
        },
      );
      await assert.rejects(client.call("agent.teleport" as "agent.list", {}), { code: -32601 });
      mkdirSync(path.join(home.home, "instances", "stray"), { recursive: true }); // not an instance: ignored by list
      assert.ok(Array.isArray(await client.call("agent.list", {})));
    } finally {
      client.close();
    }
  });
});
