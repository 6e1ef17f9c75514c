// The AppServer handshake and JSON-RPC error handling, over the real CLI on stdio.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { ServerProcess } from "../support/server-process.js";
import { FULL_CAPABILITIES, TestClient } from "../support/test-client.js";
import { makeWorkspace, threadStartParams } from "../support/harness.js";

describe("initialize handshake", () => {
  let server: ServerProcess;
  let client: TestClient;
  before(() => {
    server = ServerProcess.spawn();
    client = TestClient.overStdio(server.child);
  });
  after(() => server.kill());

  let reported: Record<string, boolean> = {};

  it("refuses requests before initialize with -32002", async () => {
    const response = await client.request("thread/list", {});
    assert.equal(response.error?.code, -32002);
    assert.match(response.error!.message, /Not initialized/);
  });

  it("answers initialize with server info and capabilities, preserving a zero id", async () => {
    const response = await client.request("initialize", { clientInfo: { name: "t", version: "1" }, capabilities: FULL_CAPABILITIES }, 0);
    assert.equal(response.id, 0);
    assert.equal(response.jsonrpc, "2.0");
    const result = response.result!;
    const serverInfo = result.serverInfo as Record<string, unknown>;
    assert.equal(serverInfo.name, "switchyard");
    assert.equal(serverInfo.protocolVersion, "1");
    const caps = result.capabilities as Record<string, boolean>;
    assert.equal(caps.threadManagement, true);
    assert.equal(caps.approvalFlow, true);
    assert.equal(caps.skillsManagement, true);
    assert.equal(caps.modelCatalogManagement, true);
    reported = caps;
    client.notify("initialized");
  });

  it("refuses a second initialize with -32003", async () => {
    const response = await client.request("initialize", { clientInfo: { name: "t" } });
    assert.equal(response.error?.code, -32003);
  });

  it("answers the methods of the families it reports absent with -32601, and of the others not", async () => {
    const familyMethod: Record<string, string> = {
      skillsManagement: "skills/list",
      commandManagement: "command/list",
      cronManagement: "cron/list",
      heartbeatManagement: "heartbeat/trigger",
      pluginManagement: "plugin/list",
      mcpManagement: "mcp/list",
      externalChannelManagement: "externalChannel/list",
      subagentManagement: "subagent/profiles/list",
      workspaceConfigManagement: "workspace/config/update",
    };
    for (const [flag, method] of Object.entries(familyMethod)) {
      const response = await client.request(method, {});
      assert.equal(response.error?.code === -32601, !reported[flag], `${method} (${flag}: ${reported[flag]})`);
    }
  });

  it("preserves string ids", async () => {
    const response = await client.request("thread/list", {}, "abc-1");
    assert.equal(response.id, "abc-1");
    assert.deepEqual(response.result?.data, []);
  });
});

describe("stdin closed right after the requests", () => {
  // `printf '<requests>' | switchyard app-server`: stdin ends while the runtime still loads, so
  // thread/list waits for it; what was asked is answered before the server exits.
  it("answers every request, then exits", async () => {
    const server = ServerProcess.spawn();
    let stdout = "";
    server.child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString("utf8")));
    const lines = [
      { jsonrpc: "2.0", id: 1, method: "initialize", params: { clientInfo: { name: "t" } } },
      { jsonrpc: "2.0", id: 2, method: "thread/list", params: {} },
      { jsonrpc: "2.0", id: 3, method: "no/such/method", params: {} },
    ];
    server.child.stdin.end(lines.map((line) => JSON.stringify(line)).join("\n") + "\n");
    assert.deepEqual(await server.exited, { code: 0, signal: null });
    // Answers may come in any order (the unknown method's before thread/list's).
    const answers = new Map(
      stdout
        .trim()
        .split("\n")
        .map((line) => JSON.parse(line) as { id: number; result?: Record<string, unknown>; error?: { code: number } })
        .map((answer) => [answer.id, answer]),
    );
    assert.deepEqual([...answers.keys()].sort(), [1, 2, 3]);
    assert.deepEqual(answers.get(2)!.result, { data: [] });
    assert.equal(answers.get(3)!.error?.code, -32601);
  });
});

describe("bad input", () => {
  let server: ServerProcess;
  let client: TestClient;
  before(async () => {
    server = ServerProcess.spawn({ args: ["--max-message-bytes", "4096", "--max-in-flight", "4"] });
    client = TestClient.overStdio(server.child);
    await client.initialize();
  });
  after(() => server.kill());

  it("answers malformed JSON with -32700 and id null, then keeps serving", async () => {
    const reply = client.waitForNext((m) => m.error?.code === -32700);
    client.sendRaw('{"jsonrpc":"2.0","id":1,"method":');
    const error = await reply;
    assert.equal(error.id, null);
    assert.deepEqual((await client.call("thread/list")).data, []);
  });

  it("answers a non-object request with -32600", async () => {
    const reply = client.waitForNext((m) => m.error?.code === -32600);
    client.sendRaw("42");
    assert.equal((await reply).id, null);
  });

  it("answers wrong param types with -32602 and the validation issues", async () => {
    const response = await client.request("thread/start", { historyMode: 7, displayName: ["x"] });
    assert.equal(response.error?.code, -32602);
    const data = response.error!.data as { issues: Array<{ path: unknown[] }> };
    assert.ok(data.issues.some((issue) => issue.path.includes("historyMode")));
  });

  it("answers unknown methods with -32601", async () => {
    const response = await client.request("no/such/method", {});
    assert.equal(response.error?.code, -32601);
    assert.match(response.error!.message, /no\/such\/method/);
  });

  it("answers an oversized message with a clear error and keeps serving", async () => {
    const reply = client.waitForNext((m) => m.error !== undefined && m.id === null && /too large/i.test(m.error.message));
    client.send({ id: 99, method: "thread/list", params: { pad: "x".repeat(10_000) } });
    const error = await reply;
    assert.equal(error.error!.code, -32600);
    assert.equal((error.error!.data as { reason: string }).reason, "messageTooLarge");
    assert.deepEqual((await client.call("thread/list")).data, []);
  });

  it("handles a batch per JSON-RPC 2.0", async () => {
    const reply = client.waitForNext((m) => Array.isArray(m) || m.id === "b1" || m.id === "b2");
    client.sendRaw(
      JSON.stringify([
        { jsonrpc: "2.0", id: "b1", method: "thread/list", params: {} },
        { jsonrpc: "2.0", method: "initialized", params: {} },
        { jsonrpc: "2.0", id: "b2", method: "nope", params: {} },
      ]),
    );
    await reply;
    const b2 = await client.waitFor((m) => m.id === "b2");
    assert.equal(b2.error?.code, -32601);
    const b1 = await client.waitFor((m) => m.id === "b1");
    assert.deepEqual(b1.result?.data, []);
  });

  it("reports runtime errors with the protocol's codes", async () => {
    const ahead = await client.request("thread/subscribe", {
      threadId: ((await client.call("thread/start", threadStartParams(makeWorkspace()))).thread as { id: string }).id,
      afterSeq: 1_000_000,
    });
    assert.equal(ahead.error?.code, -32600);
    assert.match(ahead.error!.message, /read the whole thread again/i);
    const missing = await client.request("thread/read", { threadId: "thread_missing" });
    assert.equal(missing.error?.code, -32010);
    const workspace = makeWorkspace();
    const thread = (await client.call("thread/start", threadStartParams(workspace))).thread as { id: string };
    const notRunning = await client.request("turn/interrupt", { threadId: thread.id });
    assert.equal(notRunning.error?.code, -32014);
    const noTurn = await client.request("turn/interrupt", { threadId: thread.id, turnId: "turn_missing" });
    assert.equal(noTurn.error?.code, -32013);
    const badWorkspace = await client.request("thread/start", threadStartParams("/definitely/not/here"));
    assert.equal(badWorkspace.error?.code, -32602);
    const clientHistory = (await client.call("thread/start", threadStartParams(workspace, { historyMode: "client" }))).thread as {
      id: string;
    };
    const noMessages = await client.request("turn/start", { threadId: clientHistory.id, input: [{ type: "text", text: "hi" }] });
    assert.equal(noMessages.error?.code, -32602);
    assert.match(noMessages.error!.message, /messages/);
  });
});
