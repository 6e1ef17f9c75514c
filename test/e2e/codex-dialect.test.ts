// The Codex app-server dialect over a real server: a client that speaks like Codex's (no
// "jsonrpc" member, null for absent optionals) runs a session, and everything the server sends
// it is checked against the JSON Schema the pinned Codex generates for its own protocol. Its
// threads are ordinary threads: the AppServer face lists and reads them, and the other way round.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { FakeModelServer } from "../support/fake-model-server.js";
import { FAKE_MCP_SERVER } from "../support/fake-mcp-server.js";
import { makeWorkspace, modelEnv } from "../support/harness.js";
import { codexMissing, loadCodexSchema, type CodexSchema } from "../support/codex-schema.js";
import { startRemoteModelsEndpoint } from "../support/remote-models-endpoint.js";
import { ServerProcess } from "../support/server-process.js";
import { TestClient, type Message } from "../support/test-client.js";
import { CodexNotifications, CodexRequests, CodexServerRequests } from "../../src/faces/codex/protocol.js";

describe("the Codex app-server dialect", { skip: codexMissing }, () => {
  let schema: CodexSchema;
  let fake: FakeModelServer;
  let server: ServerProcess;
  let codex: TestClient;
  let workspace: string;
  before(async () => {
    schema = loadCodexSchema();
    fake = await FakeModelServer.start();
    server = ServerProcess.spawn({ env: modelEnv(fake), args: ["--listen", "stdio://", "--listen", "ws://127.0.0.1:0"] });
    codex = TestClient.overStdio(server.child);
    codex.omitJsonrpc = true;
    workspace = makeWorkspace({ "README.md": "hello\n" });
  });
  after(async () => {
    codex?.close();
    await server?.kill();
    await fake?.close();
  });

  /** A request whose result must be valid by Codex's schema. */
  async function call(method: string, params: Record<string, unknown>): Promise<Record<string, unknown>> {
    const response = await codex.request(method, params);
    assert.equal("jsonrpc" in response, false, `${method}: answered without "jsonrpc", as Codex answers`);
    assert.equal(response.error, undefined, `${method} failed: ${JSON.stringify(response.error)}`);
    assert.deepEqual(schema.checkResult(method, response.result), [], `${method}'s result against Codex's schema`);
    return response.result!;
  }

  /** Every notification and server request received so far, checked against Codex's schema. */
  function checkReceived(): void {
    for (const message of codex.received) {
      if (message.method === undefined) continue;
      const errors = message.id !== undefined ? schema.checkServerRequest(message) : schema.checkNotification(message);
      assert.deepEqual(errors, [], `${message.method} against Codex's schema`);
    }
  }

  it("declares only methods Codex has", () => {
    assert.deepEqual(
      Object.keys(CodexRequests).filter((m) => !schema.clientRequests.includes(m)),
      [],
    );
    assert.deepEqual(
      Object.keys(CodexNotifications).filter((m) => !schema.notifications.includes(m)),
      [],
    );
    assert.deepEqual(
      Object.keys(CodexServerRequests).filter((m) => !schema.serverRequests.includes(m)),
      [],
    );
  });

  let threadId: string;
  it("runs a session the way Codex's clients do", async () => {
    const init = await call("initialize", { clientInfo: { name: "codex_test", title: null, version: "0.169.0" }, capabilities: null });
    assert.match(String(init.userAgent), /^switchyard_codex\/0\.169\.0 .* switchyard\//);
    codex.notify("initialized");
    assert.deepEqual(await call("account/read", { refreshToken: false }), {
      account: { type: "apiKey" },
      userId: null,
      requiresOpenaiAuth: false,
    });
    await call("config/read", { includeLayers: false, cwd: null });
    await call("configRequirements/read", {});
    const models = (await call("model/list", { cursor: null, limit: null, includeHidden: null })).data as Array<{ id: string }>;
    assert.ok(models.length > 0, "the fake's models are listed");
    await call("skills/list", { cwds: [workspace], forceReload: false });

    const started = await call("thread/start", {
      cwd: workspace,
      model: null,
      approvalPolicy: "on-request",
      sandbox: null,
      ephemeral: null,
    });
    threadId = (started.thread as { id: string }).id;
    assert.match(threadId, /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/, "thread ids are UUIDs, as Codex parses them");
    await codex.waitFor((m) => m.method === "thread/started");

    fake.enqueue({ kind: "response", reasoning: ["Thinking."], text: ["Hello ", "from ", "Switchyard."] });
    const ended = codex.waitFor((m) => m.method === "turn/completed", 30_000);
    const turn = (await call("turn/start", { threadId, input: [{ type: "text", text: "say hello", text_elements: [] }], model: null }))
      .turn as { id: string; status: string };
    assert.equal(turn.status, "inProgress");
    const completed = await ended;
    assert.equal((completed.params!.turn as { status: string }).status, "completed");
    const deltas = codex.received.filter((m) => m.method === "item/agentMessage/delta").map((m) => m.params!.delta);
    assert.deepEqual(deltas, ["Hello ", "from ", "Switchyard."]);
    const message = codex.received.find(
      (m) => m.method === "item/completed" && (m.params!.item as { type: string }).type === "agentMessage",
    );
    assert.equal((message!.params!.item as { text: string }).text, "Hello from Switchyard.");
    checkReceived();
  });

  it("asks before a command with item/commandExecution/requestApproval and streams its output", async () => {
    codex.received.splice(0);
    codex.handle("item/commandExecution/requestApproval", () => ({ decision: "accept" }));
    fake.enqueue(
      { kind: "response", toolCalls: [{ id: "call_1", name: "bash", arguments: { command: "echo codex-approved" } }] },
      { kind: "response", text: "It printed codex-approved." },
    );
    const ended = codex.waitFor((m) => m.method === "turn/completed", 30_000);
    await call("turn/start", { threadId, input: [{ type: "text", text: "run it", text_elements: [] }] });
    await ended;
    const asked = codex.received.find((m) => m.method === "item/commandExecution/requestApproval");
    assert.equal(asked?.params?.command, "echo codex-approved");
    assert.equal(asked?.params?.threadId, threadId);
    const output = codex.received
      .filter((m) => m.method === "item/commandExecution/outputDelta")
      .map((m) => m.params!.delta)
      .join("");
    assert.match(output, /codex-approved/);
    const command = codex.received.find(
      (m) => m.method === "item/completed" && (m.params!.item as { type: string }).type === "commandExecution",
    );
    assert.deepEqual(
      [(command!.params!.item as { status: string }).status, (command!.params!.item as { exitCode: number }).exitCode],
      ["completed", 0],
    );
    checkReceived();
  });

  it("streams the plan, and asks before a file change with item/fileChange/requestApproval", async () => {
    codex.received.splice(0);
    codex.handle("item/fileChange/requestApproval", () => ({ decision: "accept" }));
    fake.enqueue(
      {
        kind: "response",
        toolCalls: [
          {
            id: "call_plan",
            name: "update_plan",
            arguments: {
              plan: [
                { step: "Write the notes", status: "in_progress" },
                { step: "Check them", status: "pending" },
              ],
            },
          },
        ],
      },
      { kind: "response", toolCalls: [{ id: "call_write", name: "write_file", arguments: { path: "NOTES.md", content: "notes\n" } }] },
      { kind: "response", text: "Written." },
    );
    const ended = codex.waitFor((m) => m.method === "turn/completed", 30_000);
    await call("turn/start", { threadId, input: [{ type: "text", text: "write notes", text_elements: [] }] });
    await ended;
    const plan = codex.received.find((m) => m.method === "turn/plan/updated");
    assert.deepEqual(plan?.params?.plan, [
      { step: "Write the notes", status: "inProgress" },
      { step: "Check them", status: "pending" },
    ]);
    assert.equal(codex.received.filter((m) => m.method === "item/fileChange/requestApproval").length, 1);
    const change = codex.received.find((m) => m.method === "item/completed" && (m.params!.item as { type: string }).type === "fileChange");
    const changes = (change!.params!.item as { changes: Array<{ path: string; kind: { type: string }; diff: string }> }).changes;
    assert.equal(changes[0]!.kind.type, "add");
    assert.match(changes[0]!.diff, /\+notes/);
    checkReceived();
  });

  it("shows an MCP tool call as one mcpToolCall item, completed with its result", async () => {
    const appServer = await TestClient.overWebSocket(await server.websocketUrl());
    try {
      await appServer.initialize();
      const ready = appServer.waitFor(
        (m) => m.method === "mcp/status/updated" && (m.params!.server as { startupState: string }).startupState === "ready",
        30_000,
      );
      const calc = { name: "calc", enabled: true, transport: "stdio", command: process.execPath, args: [FAKE_MCP_SERVER] };
      await appServer.call("mcp/upsert", { workspacePath: workspace, server: calc });
      await ready;
    } finally {
      appServer.close();
    }
    codex.received.splice(0);
    fake.enqueue(
      { kind: "response", toolCalls: [{ id: "call_mcp", name: "mcp__calc__add", arguments: { a: 2, b: 3 } }] },
      { kind: "response", text: "It is 5." },
    );
    const ended = codex.waitFor((m) => m.method === "turn/completed", 30_000);
    await call("turn/start", { threadId, input: [{ type: "text", text: "add them", text_elements: [] }] });
    await ended;
    const mcpItems = (method: string) =>
      codex.received
        .filter((m) => m.method === method && (m.params!.item as { type: string }).type === "mcpToolCall")
        .map((m) => m.params!.item);
    assert.deepEqual(
      mcpItems("item/started").map((i) => [
        (i as { server: string }).server,
        (i as { tool: string }).tool,
        (i as { status: string }).status,
      ]),
      [["calc", "add", "inProgress"]],
    );
    const completed = mcpItems("item/completed") as Array<{ status: string; result: { content: Array<{ text: string }> } }>;
    assert.equal(completed.length, 1);
    assert.equal(completed[0]!.status, "completed");
    assert.match(completed[0]!.result.content[0]!.text, /5/);
    checkReceived();
  });

  it("reads, lists, renames, forks, archives and resumes threads", async () => {
    const read = await call("thread/read", { threadId, includeTurns: true });
    const turns = (read.thread as { turns: Array<{ items: Array<{ type: string }> }> }).turns;
    assert.equal(turns.length, 4);
    assert.deepEqual(
      turns[0]!.items.map((i) => i.type),
      ["userMessage", "reasoning", "agentMessage"],
    );
    assert.equal((read.thread as { preview: string }).preview, "say hello");
    await call("thread/name/set", { threadId, name: "Greeting" });
    const listed = (await call("thread/list", { cursor: null, limit: 10, archived: null, cwd: null, searchTerm: null })).data as Array<{
      id: string;
      name: string | null;
    }>;
    assert.equal(listed.find((t) => t.id === threadId)?.name, "Greeting");
    const fork = (await call("thread/fork", { threadId, model: null })).thread as { id: string; forkedFromId: string };
    assert.equal(fork.forkedFromId, threadId);
    await call("thread/archive", { threadId: fork.id });
    const afterArchive = (await call("thread/list", { limit: 10 })).data as Array<{ id: string }>;
    assert.equal(
      afterArchive.some((t) => t.id === fork.id),
      false,
      "archived threads are listed only when asked for",
    );
    await call("thread/unarchive", { threadId: fork.id });
    const resumed = await call("thread/resume", { threadId, model: null, cwd: null, approvalPolicy: null, excludeTurns: false });
    assert.equal((resumed.thread as { turns: unknown[] }).turns.length, 4);
    checkReceived();
  });

  it("answers what it cannot serve with errors a Codex client reads", async () => {
    const unknown = await codex.request("thread/goal/get", { threadId });
    assert.equal(unknown.error?.code, -32601);
    const notRunning = await codex.request("turn/interrupt", { threadId, turnId: "turn_none" });
    assert.equal(notRunning.error?.code, -32600);
    const missing = await codex.request("thread/read", { threadId: "00000000-0000-4000-8000-000000000000" });
    assert.equal(missing.error?.code, -32600);
    const invalid = await codex.request("turn/start", { threadId, input: [] });
    assert.equal(invalid.error?.code, -32602);
  });

  it('also serves a Codex client that sends "jsonrpc", by the shape of its initialize', async () => {
    const client = await TestClient.overWebSocket((await server.websocketUrl()).replace(/\/ws$/, "/"));
    try {
      const response = await client.request("initialize", {
        clientInfo: { name: "sdk", title: null, version: "1" },
        capabilities: { experimentalApi: true },
      });
      assert.equal(response.jsonrpc, "2.0", "answered with the member it was sent");
      assert.match(String(response.result?.userAgent), /^switchyard_codex\//);
      assert.deepEqual(schema.checkResult("initialize", response.result), []);
    } finally {
      client.close();
    }
  });

  it("shares its threads with the AppServer face, both ways", async () => {
    const appServer = await TestClient.overWebSocket(await server.websocketUrl());
    try {
      await appServer.initialize();
      const { data } = (await appServer.call("thread/list", {})) as { data: Array<{ id: string; displayName?: string }> };
      const ours = data.find((t) => t.displayName === "Greeting");
      assert.ok(ours, "the Codex thread is listed by the AppServer face");
      const { thread } = (await appServer.call("thread/read", { threadId: ours.id, includeTurns: true })) as {
        thread: { turns: Array<{ items: Array<{ type: string; payload: { text?: string } }> }> };
      };
      assert.ok(thread.turns[0]!.items.some((i) => i.type === "agentMessage" && i.payload.text === "Hello from Switchyard."));

      // A thread started on the AppServer face, resumed in the Codex dialect with its history.
      fake.enqueue({ kind: "response", text: "From the other face." });
      const started = (await appServer.call("thread/start", { workspacePath: workspace, originChannel: "test" })) as {
        thread: { id: string };
      };
      const done = appServer.waitFor((m: Message) => m.method === "turn/completed", 30_000);
      await appServer.call("turn/start", { threadId: started.thread.id, input: [{ type: "text", text: "hi there" }] });
      await done;
      const codexId = ((await call("thread/list", { limit: 50 })).data as Array<{ id: string; preview: string }>).find(
        (t) => t.preview === "hi there",
      )!.id;
      const resumed = await call("thread/resume", { threadId: codexId });
      const items = (resumed.thread as { turns: Array<{ items: Array<{ type: string; text?: string }> }> }).turns[0]!.items;
      assert.ok(items.some((i) => i.type === "agentMessage" && i.text === "From the other face."));
    } finally {
      appServer.close();
    }
  });
});

describe("the Codex dialect with a provider whose models endpoint is on another machine", () => {
  it("describes the configuration and a new thread without asking that endpoint; model/list asks it", async (t) => {
    const remote = await startRemoteModelsEndpoint(["model-listed-remotely"]);
    if (!remote) return t.skip("this machine has no address besides loopback");
    const server = ServerProcess.spawn({ env: { OPENAI_API_KEY: "k", OPENAI_BASE_URL: remote.baseURL } });
    const client = TestClient.overStdio(server.child);
    client.omitJsonrpc = true;
    try {
      await client.call("initialize", { clientInfo: { name: "codex_test", title: null, version: "0.169.0" }, capabilities: null });
      client.notify("initialized");
      const { config } = (await client.call("config/read", { includeLayers: false, cwd: null })) as { config: { model: string } };
      const { model } = await client.call("thread/start", { cwd: makeWorkspace({}), model: null });
      assert.deepEqual([config.model, model], ["gpt-4.1", "gpt-4.1"], "the default model of a compatible server's provider");
      assert.equal(remote.listings, 0);
      const { data } = (await client.call("model/list", { cursor: null, limit: null, includeHidden: null })) as {
        data: Array<{ id: string }>;
      };
      assert.ok(data.some((m) => m.id === "model-listed-remotely"));
      assert.equal(remote.listings, 1);
    } finally {
      client.close();
      await server.kill();
      await remote.close();
    }
  });
});
