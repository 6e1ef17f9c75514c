// Plugins over a real server: the built-in catalog (SWITCHYARD_BUILTIN_PLUGIN_ROOTS), install,
// enable, remove; a plugin's skill joining the catalog; the model calling a plugin function
// through an approval, recorded as one pluginFunctionCall item, also after a restart.
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { FakeModelServer } from "../support/fake-model-server.js";
import { startHarness, text, type Harness } from "../support/harness.js";
import { tempDir } from "../support/server-process.js";

type Plugin = {
  id: string;
  installed: boolean;
  installable: boolean;
  removable: boolean;
  enabled: boolean;
  skills: Array<{ name: string }>;
};
type Item = { type: string; payload: Record<string, unknown> };
type Body = {
  messages: Array<{ role: string; content: unknown; tool_calls?: unknown[] }>;
  tools?: Array<{ function: { name: string; parameters: unknown } }>;
};

/** A catalog with one plugin: a function (a node script upper-casing its input) and a skill. */
function makeCatalog(): string {
  const root = tempDir("plugins");
  const dir = path.join(root, "shouter");
  fs.mkdirSync(path.join(dir, "skills", "shouting"), { recursive: true });
  fs.writeFileSync(
    path.join(dir, "plugin.json"),
    JSON.stringify({
      id: "shouter",
      displayName: "Shouter",
      description: "Says things loudly.",
      version: "1.0.0",
      functions: [
        {
          name: "shout",
          description: "Upper-cases a text.",
          command: [process.execPath, "./shout.mjs"],
          inputSchema: { type: "object", properties: { text: { type: "string" } }, required: ["text"] },
        },
      ],
    }),
  );
  fs.writeFileSync(
    path.join(dir, "shout.mjs"),
    'let s="";process.stdin.on("data",(d)=>s+=d).on("end",()=>process.stdout.write(JSON.parse(s).text.toUpperCase()+" (in "+process.cwd()+")"));',
  );
  fs.writeFileSync(
    path.join(dir, "skills", "shouting", "SKILL.md"),
    "---\ndescription: How to shout.\n---\nShout with the shout function.\n",
  );
  return root;
}

describe("plugins", () => {
  let fake: FakeModelServer;
  let h: Harness;
  let catalog: string;
  before(async () => {
    fake = await FakeModelServer.start();
    catalog = makeCatalog();
    h = await startHarness({ fake, env: { SWITCHYARD_BUILTIN_PLUGIN_ROOTS: catalog } });
    h.client.handle("item/approval/request", () => ({ decision: "accept" }));
  });
  after(async () => {
    await h.close();
    await fake.close();
  });

  const call = (method: string, params: Record<string, unknown> = {}) => h.client.call(method, { workspacePath: h.workspace, ...params });
  const plugins = async () => (await call("plugin/list")).plugins as Plugin[];

  it("lists a built-in plugin as installable, installs it with a marker, and announces it", async () => {
    const [listed] = await plugins();
    assert.deepEqual([listed!.id, listed!.installed, listed!.installable], ["shouter", false, true]);
    const changed = h.client.notification("workspace/configChanged", (p) => p.source === "plugin/install");
    const { plugin } = (await call("plugin/install", { id: "shouter" })) as { plugin: Plugin };
    assert.deepEqual([plugin.installed, plugin.enabled, plugin.removable], [true, true, true]);
    assert.deepEqual((await changed).regions, ["plugins", "skills", "mcp"]);
    assert.ok(fs.existsSync(path.join(h.workspace, ".craft", "plugins", "shouter", ".builtin")));
    const skills = (await call("skills/list")).skills as Array<{ name: string; source: string; pluginId?: string }>;
    assert.deepEqual(
      skills.filter((s) => s.source === "plugin").map((s) => [s.name, s.pluginId]),
      [["shouting", "shouter"]],
    );
  });

  it("the model calls a plugin function: approved, run in the workspace, one pluginFunctionCall item", async () => {
    const threadId = await h.startThread();
    fake.enqueue(
      { kind: "response", toolCalls: [{ name: "plugin__shouter__shout", arguments: { text: "hello" } }] },
      { kind: "response", text: "Shouted." },
    );
    const from = fake.requests.length;
    const turn = (await h.client.call("turn/start", { threadId, input: text("shout hello") })).turn as { id: string };
    assert.equal((await h.client.turnEnd(threadId, turn.id)).method, "turn/completed");
    const [first, second] = fake.requests.slice(from).map((r) => r.body as Body);
    const spec = first!.tools!.find((t) => t.function.name === "plugin__shouter__shout");
    assert.deepEqual((spec?.function.parameters as { required: string[] }).required, ["text"]);
    const result = String(second!.messages.find((m) => m.role === "tool")?.content);
    assert.equal(result, `HELLO (in ${fs.realpathSync(h.workspace)})`);

    const items = h.client
      .notifications("item/completed")
      .filter((p) => p.threadId === threadId)
      .map((p) => p.item as Item);
    const calls = items.filter((i) => i.type === "pluginFunctionCall");
    assert.equal(calls.length, 1);
    assert.deepEqual([calls[0]!.payload.pluginId, calls[0]!.payload.functionName, calls[0]!.payload.success], ["shouter", "shout", true]);
    assert.ok(!items.some((i) => i.type === "toolCall" || i.type === "toolResult"), "no companion toolCall/toolResult");

    // The next turn's history has the call and its result, in order.
    fake.enqueue({ kind: "response", text: "again" });
    const next = (await h.client.call("turn/start", { threadId, input: text("and?") })).turn as { id: string };
    await h.client.turnEnd(threadId, next.id);
    const history = (fake.requests.at(-1)!.body as Body).messages.filter((m) => m.role !== "system");
    assert.deepEqual(
      history.map((m) => m.role),
      ["user", "assistant", "tool", "assistant", "user"],
    );
  });

  it("disables, refuses to remove a user-made plugin, and removes an installed one", async () => {
    const disabled = (await call("plugin/setEnabled", { id: "shouter", enabled: false })).plugin as Plugin;
    assert.equal(disabled.enabled, false);
    assert.ok(!((await call("skills/list")).skills as Array<{ source: string }>).some((s) => s.source === "plugin"));

    const own = path.join(h.workspace, ".craft", "plugins", "mine");
    fs.mkdirSync(own, { recursive: true });
    fs.writeFileSync(path.join(own, "plugin.json"), JSON.stringify({ id: "mine" }));
    assert.equal((await h.client.request("plugin/remove", { workspacePath: h.workspace, id: "mine" })).error?.code, -32602);

    const removed = (await call("plugin/remove", { id: "shouter" })).plugin as Plugin;
    assert.deepEqual([removed.installed, removed.installable], [false, true]);
    assert.equal(fs.existsSync(path.join(h.workspace, ".craft", "plugins", "shouter")), false);
    assert.equal((await h.client.request("plugin/view", { workspacePath: h.workspace, id: "nope" })).error?.code, -32041);
  });
});
