// MCP servers over a real Switchyard and real MCP servers written with the SDK (stdio and
// Streamable HTTP): configuration, statuses, the model calling a tool through an approval, a
// crash and its restart, testing a configuration without saving it.
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { FAKE_MCP_SERVER, startHttpMcpServer } from "../support/fake-mcp-server.js";
import { startHarness, text, type Harness } from "../support/harness.js";

type Status = { name: string; startupState: string; toolCount: number; lastError: string | null };
type Body = { messages: Array<{ role: string; content: unknown }>; tools?: Array<{ function: { name: string; parameters: unknown } }> };

describe("MCP servers", () => {
  let h: Harness;
  let ws: string;
  const approvals: Array<Record<string, unknown>> = [];
  const calc = {
    name: "calc",
    enabled: true,
    transport: "stdio",
    command: process.execPath,
    args: [FAKE_MCP_SERVER],
    env: { MCP_TEST_USER: "alice" },
  };

  before(async () => {
    h = await startHarness({ env: { SWITCHYARD_MCP_RESTART_DELAY_MS: "50" } });
    ws = h.workspace;
    h.client.handle("item/approval/request", (params) => {
      approvals.push(params as Record<string, unknown>);
      return { decision: "accept" };
    });
  });
  after(() => h.close());

  const call = (method: string, params: Record<string, unknown> = {}) => h.client.call(method, { workspacePath: ws, ...params });
  const request = (method: string, params: Record<string, unknown> = {}) => h.client.request(method, { workspacePath: ws, ...params });
  const status = (name: string, state: string) =>
    h.client.notification("mcp/status/updated", (p) => (p.server as Status).name === name && (p.server as Status).startupState === state);

  it("mcp/upsert saves a stdio server, announces it, and connects it", async () => {
    const changed = h.client.notification("workspace/configChanged", (p) => p.source === "mcp/upsert");
    const ready = status("calc", "ready");
    const saved = await call("mcp/upsert", { server: calc });
    assert.deepEqual((saved.server as { origin: unknown }).origin, { kind: "workspace" });
    assert.deepEqual((await changed).regions, ["mcp"]);
    assert.equal(((await ready).server as Status).toolCount, 3);

    const config = JSON.parse(fs.readFileSync(path.join(ws, ".craft/config.json"), "utf8")) as {
      mcp: { servers: Array<{ name: string }> };
    };
    assert.deepEqual(
      config.mcp.servers.map((s) => s.name),
      ["calc"],
    );
    assert.deepEqual(
      ((await call("mcp/list")).servers as Array<{ name: string }>).map((s) => s.name),
      ["calc"],
    );
    assert.equal(((await call("mcp/get", { name: "CALC" })).server as { command: string }).command, process.execPath);
    const statuses = (await call("mcp/status/list")).servers as Status[];
    assert.deepEqual(
      statuses.map((s) => [s.name, s.startupState, s.toolCount]),
      [["calc", "ready", 3]],
    );
  });

  it("refuses invalid configurations, case-only name clashes and unknown names", async () => {
    assert.equal((await request("mcp/upsert", { server: { name: "x", enabled: true, transport: "stdio" } })).error?.code, -32072);
    const mixed = await request("mcp/upsert", { server: { name: "x", enabled: true, transport: "stdio", command: "y", url: "http://z" } });
    assert.equal(mixed.error?.code, -32072);
    assert.match(mixed.error?.message ?? "", /url is not allowed for the stdio transport/);
    assert.equal((await request("mcp/upsert", { server: { ...calc, name: "CALC" } })).error?.code, -32074);
    assert.equal((await request("mcp/get", { name: "nope" })).error?.code, -32070);
    assert.equal((await request("mcp/remove", { name: "nope" })).error?.code, -32070);
  });

  it("the model calls the server's tools through an approval; the items name the server", async () => {
    const threadId = await h.startThread();
    h.fake.enqueue(
      {
        kind: "response",
        toolCalls: [
          { name: "mcp__calc__add", arguments: { a: 2, b: 3 } },
          { name: "mcp__calc__whoami", arguments: {} },
        ],
      },
      { kind: "response", text: "5, alice" },
    );
    const from = h.fake.requests.length;
    const turn = (await h.client.call("turn/start", { threadId, input: text("add") })).turn as { id: string };
    assert.equal((await h.client.turnEnd(threadId, turn.id)).method, "turn/completed");

    const [first, second] = h.fake.requests.slice(from).map((r) => r.body as Body);
    const add = first!.tools!.find((t) => t.function.name === "mcp__calc__add");
    assert.deepEqual((add?.function.parameters as { properties: object }).properties, { a: { type: "number" }, b: { type: "number" } });
    const results = second!.messages.filter((m) => m.role === "tool").map((m) => m.content);
    assert.deepEqual(results, ["5", "alice"]);

    assert.match(String(approvals.at(-2)?.operation), /^calc: add \{"a":2,"b":3\}/);
    assert.equal(approvals.at(-2)?.scopeKey, "mcp:calc:add");
    const calls = h.client
      .notifications("item/completed")
      .map((p) => p.item as { type: string; payload: { toolName: string; mcpServer?: string } })
      .filter((i) => i.type === "toolCall" && i.payload.toolName === "mcp__calc__add");
    assert.equal(calls.at(-1)?.payload.mcpServer, "calc");
  });

  it("a server that crashes is reported failed, with its stderr, and restarted", async () => {
    const threadId = await h.startThread();
    const failed = status("calc", "failed");
    const readyAgain = h.client.waitForNext(
      (m) => m.method === "mcp/status/updated" && (m.params?.server as Status).startupState === "ready",
      20_000,
    );
    h.fake.enqueue({ kind: "response", toolCalls: [{ name: "mcp__calc__crash", arguments: {} }] }, { kind: "response", text: "oops" });
    const turn = (await h.client.call("turn/start", { threadId, input: text("crash it") })).turn as { id: string };
    await h.client.turnEnd(threadId, turn.id);
    const report = (await failed).server as Status & { nextRetryAt?: string };
    assert.match(report.lastError ?? "", /crashing on request/);
    assert.ok(report.nextRetryAt);
    assert.equal(((await readyAgain).params?.server as Status).toolCount, 3);
  });

  it("mcp/test connects without saving, and reports a failure as a result", async () => {
    const ok = await call("mcp/test", { server: { ...calc, name: "probe" } });
    assert.deepEqual(ok, { success: true, toolCount: 3 });
    const bad = await call("mcp/test", {
      server: { name: "bad", enabled: true, transport: "stdio", command: "switchyard-no-such-mcp-server" },
    });
    assert.equal(bad.success, false);
    assert.equal(bad.errorCode, "McpServerTestFailed");
    assert.ok(String(bad.errorMessage).length > 0);
    assert.deepEqual(
      ((await call("mcp/list")).servers as Array<{ name: string }>).map((s) => s.name),
      ["calc"],
    );
  });

  it("connects a Streamable HTTP server, and mcp/remove disconnects one", async () => {
    const web = await startHttpMcpServer();
    try {
      const ready = status("web", "ready");
      await call("mcp/upsert", { server: { name: "web", enabled: true, transport: "streamableHttp", url: web.url } });
      assert.equal(((await ready).server as Status).toolCount, 3);

      await call("mcp/remove", { name: "web" });
      assert.deepEqual(
        ((await call("mcp/status/list")).servers as Status[]).map((s) => s.name),
        ["calc"],
      );
    } finally {
      await web.close();
    }
  });
});
