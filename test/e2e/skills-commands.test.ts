// Skills and custom commands over a real server: discovery from every source, the effective
// view and variants, enabling, uninstalling, the change announcements, the model loading a skill
// with load_skill, skillRef and commandRef inputs, and command/execute.
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { startHarness, text, type Harness } from "../support/harness.js";
import { ServerProcess } from "../support/server-process.js";
import { TestClient } from "../support/test-client.js";

type Skill = { name: string; source: string; enabled: boolean; available: boolean; unavailableReason: string | null; hasVariant?: boolean };
type Message = { role: string; content: unknown };

function write(file: string, content: string): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, content);
}

const skill = (description: string, body: string, extra = ""): string => `---\ndescription: ${description}\n${extra}---\n\n${body}\n`;

describe("skills and custom commands", () => {
  let h: Harness;
  let ws: string;
  let userDir: string;
  before(async () => {
    h = await startHarness();
    ws = h.workspace;
    userDir = h.server.dataDir;
    write(
      path.join(ws, ".craft/skills/deploy/SKILL.md"),
      skill("Deploy the service to staging.", "Run make deploy-staging, then check /healthz."),
    );
    write(path.join(ws, ".craft/skills/shadowed/SKILL.md"), skill("The workspace's version.", "workspace body"));
    write(path.join(userDir, "skills/shadowed/SKILL.md"), skill("The user's version.", "user body"));
    write(path.join(userDir, "skills/notes/SKILL.md"), skill("Keep notes.", "Write notes to NOTES.md."));
    write(path.join(ws, ".craft/skills/needs-tool/SKILL.md"), skill("Needs a missing tool.", "body", "bins: switchyard-no-such-binary\n"));
    write(path.join(ws, ".craft/skill-variants/write-skill/SKILL.md"), skill("Adapted.", "The workspace's adaptation of write-skill."));
    write(
      path.join(ws, ".craft/commands/review.md"),
      "---\ndescription: Review a file\nargument-hint: <path>\n---\nReview $1 carefully. All: $ARGUMENTS\n",
    );
    write(path.join(userDir, "commands/hello.md"), "Say hello.");
  });
  after(() => h.close());

  const call = (method: string, params: Record<string, unknown> = {}) => h.client.call(method, { workspacePath: ws, ...params });
  const list = async (params: Record<string, unknown> = {}) => (await call("skills/list", params)).skills as Skill[];

  it("initialize reports the skills and command families", async () => {
    const server = ServerProcess.spawn();
    const client = TestClient.overStdio(server.child);
    try {
      const { capabilities } = (await client.initialize()) as { capabilities: Record<string, boolean> };
      assert.equal(capabilities.skillsManagement, true);
      assert.equal(capabilities.skillVariants, true);
      assert.equal(capabilities.commandManagement, true);
    } finally {
      client.close();
      await server.kill();
    }
  });

  it("skills/list merges the sources, the workspace's first, and says what is unavailable", async () => {
    const skills = await list();
    const byName = new Map(skills.map((s) => [s.name, s]));
    assert.equal(byName.get("deploy")?.source, "workspace");
    assert.equal(byName.get("notes")?.source, "user");
    assert.equal(byName.get("write-skill")?.source, "builtin");
    assert.equal(byName.get("write-skill")?.hasVariant, true);
    assert.equal(byName.get("shadowed")?.source, "workspace", "the workspace's skill hides the user's of the same name");
    const needs = byName.get("needs-tool")!;
    assert.equal(needs.available, false);
    assert.match(needs.unavailableReason ?? "", /switchyard-no-such-binary/);
    assert.ok(!(await list({ includeUnavailable: false })).some((s) => s.name === "needs-tool"));
  });

  it("skills/read gives the source file, skills/view what the agent reads; restoreOriginal drops the variant", async () => {
    const read = await call("skills/read", { name: "deploy" });
    assert.match(read.content as string, /^---\ndescription: Deploy/);
    assert.deepEqual(read.metadata, { description: "Deploy the service to staging." });
    assert.equal((await call("skills/view", { name: "deploy" })).content, "Run make deploy-staging, then check /healthz.\n");

    assert.match((await call("skills/view", { name: "write-skill" })).content as string, /workspace's adaptation/);
    assert.deepEqual(await call("skills/restoreOriginal", { name: "write-skill" }), { name: "write-skill", restored: true });
    assert.match((await call("skills/view", { name: "write-skill" })).content as string, /^# Writing a skill/);
    assert.equal((await list()).find((s) => s.name === "write-skill")?.hasVariant, undefined);
    assert.deepEqual(await call("skills/restoreOriginal", { name: "write-skill" }), { name: "write-skill", restored: false });

    const missing = await h.client.request("skills/read", { workspacePath: ws, name: "nope" });
    assert.equal(missing.error?.code, -32040);
    const climbing = await h.client.request("skills/read", { workspacePath: ws, name: "../deploy" });
    assert.equal(climbing.error?.code, -32040);
  });

  it("skills/setEnabled persists in .craft/config.json and announces workspace/configChanged", async () => {
    const changed = h.client.notification("workspace/configChanged", (p) => p.source === "skills/setEnabled");
    const result = await call("skills/setEnabled", { name: "notes", enabled: false });
    assert.equal((result.skill as Skill).enabled, false);
    const change = await changed;
    assert.deepEqual(change.regions, ["skills"]);
    assert.equal(change.workspacePath, ws);
    const config = JSON.parse(fs.readFileSync(path.join(ws, ".craft/config.json"), "utf8")) as { skills: { disabled: string[] } };
    assert.deepEqual(config.skills.disabled, ["notes"]);
    assert.equal((await list()).find((s) => s.name === "notes")?.enabled, false);
    // Already in that state: nothing written, nothing announced.
    const before = h.client.notifications("workspace/configChanged").length;
    await call("skills/setEnabled", { name: "notes", enabled: false });
    assert.equal(h.client.notifications("workspace/configChanged").length, before);
  });

  it("skills/uninstall removes workspace and user skills, and refuses system ones", async () => {
    const system = await h.client.request("skills/uninstall", { workspacePath: ws, name: "write-command" });
    assert.equal(system.error?.code, -32602);
    assert.match(system.error?.message ?? "", /ships with Switchyard/);

    write(path.join(ws, ".craft/skills/old/SKILL.md"), skill("Old.", "old"));
    write(path.join(ws, ".craft/skill-variants/old/SKILL.md"), skill("Old, adapted.", "old adapted"));
    const removed = await call("skills/uninstall", { name: "old" });
    assert.equal(removed.uninstalled, true);
    assert.equal(removed.source, "workspace");
    assert.equal(removed.removedVariantCount, 1);
    assert.equal(fs.existsSync(path.join(ws, ".craft/skills/old")), false);
    assert.equal(fs.existsSync(path.join(ws, ".craft/skill-variants/old")), false);
    assert.equal((await h.client.request("skills/uninstall", { workspacePath: ws, name: "old" })).error?.code, -32040);
  });

  it("the model is offered the enabled skills and loads one with load_skill", async () => {
    const threadId = await h.startThread();
    h.fake.enqueue(
      { kind: "response", toolCalls: [{ name: "load_skill", arguments: { name: "deploy" } }] },
      { kind: "response", text: "Deploying." },
    );
    const from = h.fake.requests.length;
    const turn = (await h.client.call("turn/start", { threadId, input: text("ship it") })).turn as { id: string };
    assert.equal((await h.client.turnEnd(threadId, turn.id)).method, "turn/completed");
    const [first, second] = h.fake.requests
      .slice(from)
      .map((r) => r.body as { messages: Message[]; tools: Array<{ function: { name: string } }> });
    const system = String(first!.messages.find((m) => m.role === "system")?.content);
    assert.match(system, /- deploy: Deploy the service to staging\./);
    assert.doesNotMatch(system, /- notes:/, "a disabled skill is not offered");
    assert.doesNotMatch(system, /- needs-tool:/, "an unavailable skill is not offered");
    assert.ok(first!.tools.some((t) => t.function.name === "load_skill"));
    const toolResult = second!.messages.find((m) => m.role === "tool");
    assert.equal(toolResult?.content, "Run make deploy-staging, then check /healthz.\n");
  });

  it("a skillRef input brings the skill's content, a commandRef the command's prompt", async () => {
    const threadId = await h.startThread();
    h.fake.enqueue({ kind: "response", text: "ok" });
    const turn = (
      await h.client.call("turn/start", {
        threadId,
        input: [
          { type: "skillRef", name: "deploy" },
          { type: "commandRef", name: "review", args: "src/a.ts fast" },
        ],
      })
    ).turn as { id: string };
    assert.equal((await h.client.turnEnd(threadId, turn.id)).method, "turn/completed");
    const user = String((h.fake.requests.at(-1)!.body as { messages: Message[] }).messages.findLast((m) => m.role === "user")?.content);
    assert.match(user, /<skill name="deploy">\nRun make deploy-staging/);
    assert.match(user, /Review src\/a\.ts carefully\. All: src\/a\.ts fast/);

    const failed = (await h.client.call("turn/start", { threadId, input: [{ type: "skillRef", name: "notes" }] })).turn as { id: string };
    const end = await h.client.turnEnd(threadId, failed.id);
    assert.equal(end.method, "turn/failed", "a disabled skill cannot be sent");
  });

  it("command/list lists the built-in and custom commands", async () => {
    const all = (await call("command/list")).commands as Array<{ name: string; category: string; argumentHint?: string; source?: string }>;
    assert.deepEqual(
      all.map((c) => c.name),
      ["/new", "/stop", "/review", "/hello"],
    );
    assert.equal(all.find((c) => c.name === "/review")?.argumentHint, "<path>");
    assert.equal(all.find((c) => c.name === "/hello")?.source, "user");
    const custom = (await call("command/list", { includeBuiltins: false })).commands as Array<{ category: string }>;
    assert.ok(custom.length === 2 && custom.every((c) => c.category === "custom"));
  });

  it("command/execute runs a custom command as the thread's next turn, and the built-ins", async () => {
    const threadId = await h.startThread();
    h.fake.enqueue({ kind: "response", text: "reviewed" });
    const result = await h.client.call("command/execute", { threadId, command: "/review lib/b.ts" });
    assert.equal(result.expandedPrompt, "Review lib/b.ts carefully. All: lib/b.ts\n");
    const turnId = (result.turn as { id: string }).id;
    assert.equal((await h.client.turnEnd(threadId, turnId)).method, "turn/completed");
    const user = (h.fake.requests.at(-1)!.body as { messages: Message[] }).messages.findLast((m) => m.role === "user");
    assert.equal(user?.content, "Review lib/b.ts carefully. All: lib/b.ts\n");

    const missing = await h.client.request("command/execute", { threadId, command: "/nope" });
    assert.equal(missing.error?.code, -32060);

    const stop = await h.client.call("command/execute", { threadId, command: "/stop" });
    assert.equal(stop.message, "No turn is running.");
    const fresh = await h.client.call("command/execute", { threadId, command: "/new" });
    assert.equal(fresh.sessionReset, true);
    const next = fresh.thread as { id: string; workspacePath: string };
    assert.notEqual(next.id, threadId);
    assert.equal(next.workspacePath, ws);
  });
});
