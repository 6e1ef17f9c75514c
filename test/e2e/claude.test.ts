// The claude-app-server dialect (spec 004) end to end, over the real CLI with the Anthropic
// wire format: the document's example session over stdio and WebSocket, permission modes and
// approvals, fork, steer, interrupt, and threads shared with AppServer clients.
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { knownModels } from "../../src/providers/catalog.js";
import { FakeModelServer } from "../support/fake-model-server.js";
import { startRemoteModelsEndpoint } from "../support/remote-models-endpoint.js";
import { makeWorkspace, modelEnv, text, threadStartParams } from "../support/harness.js";
import { freePort, ServerProcess } from "../support/server-process.js";
import { TestClient, type Message } from "../support/test-client.js";

type Params = NonNullable<Message["params"]>;
type ItemContent = { type: string } & Record<string, unknown>;
type StoredItem = { id: string; created_at: number; item: ItemContent };
type WireTurn = { id: string; status: string; user_content: string; items: StoredItem[] } & Record<string, unknown>;

/** The "Example session" of the document, verbatim; the cwd and thread id are filled in. */
const EXAMPLE_SESSION = [
  `{"jsonrpc":"2.0","method":"initialize","params":{"client":{"name":"demo","version":"1.0"},"cwd":"/tmp/my-project"},"id":1}`,
  `{"jsonrpc":"2.0","method":"thread/start","params":{"cwd":"/tmp/my-project","permission_mode":"acceptEdits"},"id":2}`,
  `{"jsonrpc":"2.0","method":"turn/start","params":{"thread_id":"<id from above>","content":"List the files in this project and summarize what it does."},"id":3}`,
];

function spawnServer(fake: FakeModelServer, args: string[] = []): ServerProcess {
  return ServerProcess.spawn({ args, env: modelEnv(fake, "anthropic") });
}

async function initialize(client: TestClient, params: Record<string, unknown> = {}): Promise<Params> {
  return client.call("initialize", { client: { name: "claude-test", version: "1.0" }, ...params });
}

function turnCompleted(client: TestClient, threadId: string, turnId?: string): Promise<Params> {
  return client.notification("turn/completed", (p) => p.thread_id === threadId && (turnId === undefined || p.turn_id === turnId));
}

/** The items item/created announced on a thread, as sent: `{id, created_at, item}`. */
function storedItems(client: TestClient, threadId: string): StoredItem[] {
  return client
    .notifications("item/created")
    .filter((p) => p.thread_id === threadId)
    .map((p) => p.item as StoredItem);
}

/** Their content (`item.item`), which is what most assertions look at. */
function createdItems(client: TestClient, threadId: string): ItemContent[] {
  return storedItems(client, threadId).map((i) => i.item);
}

function indexOf(client: TestClient, match: (m: Message) => boolean): number {
  return client.received.findIndex(match);
}

/** Replays the example session and checks every response and the streamed turn. */
async function replayExample(client: TestClient, fake: FakeModelServer): Promise<void> {
  const workspace = makeWorkspace({ "README.md": "# demo\n", "index.js": "console.log('hi');\n" });
  fake.enqueue(
    { kind: "response", reasoning: ["Let me ", "look around."], toolCalls: [{ id: "toolu_list", name: "list_files", arguments: {} }] },
    { kind: "response", text: ["This project ", "prints a greeting ", "from index.js."] },
  );
  const fill = (line: string, threadId = ""): string =>
    line.replaceAll("/tmp/my-project", JSON.stringify(workspace).slice(1, -1)).replace("<id from above>", threadId);

  const initialized = client.waitFor((m) => m.method === "initialized");
  client.sendRaw(fill(EXAMPLE_SESSION[0]!));
  const init = (await client.waitFor((m) => m.id === 1 && m.method === undefined)).result!;
  assert.deepEqual((init.server as Params).name, "claude-app-server");
  assert.equal(typeof (init.server as Params).version, "string");
  const caps = init.capabilities as { methods: string[]; notifications: string[]; permission_modes: string[]; content_blocks: string[] };
  for (const m of [
    "thread/start",
    "thread/resume",
    "thread/fork",
    "turn/start",
    "turn/steer",
    "turn/interrupt",
    "model/list",
    "skills/list",
    "app/list",
    "approval/respond",
  ]) {
    assert.ok(caps.methods.includes(m), m);
  }
  assert.deepEqual(caps.permission_modes, ["default", "acceptEdits", "bypassPermissions"]);
  assert.deepEqual(caps.content_blocks, ["text", "image"]);
  assert.deepEqual((await initialized).params, { server: "claude-app-server" });
  assert.ok(
    indexOf(client, (m) => m.method === "initialized") > indexOf(client, (m) => m.id === 1),
    "initialized comes after the response",
  );

  client.sendRaw(fill(EXAMPLE_SESSION[1]!));
  const started = (await client.waitFor((m) => m.id === 2 && m.method === undefined)).result!;
  const threadId = started.thread_id as string;
  assert.match(threadId, /^thread_/);
  assert.equal(typeof started.created_at, "number");
  assert.ok(Math.abs((started.created_at as number) - Date.now()) < 60_000, "epoch milliseconds");

  client.sendRaw(fill(EXAMPLE_SESSION[2]!, threadId));
  const turn = (await client.waitFor((m) => m.id === 3 && m.method === undefined)).result!;
  const turnId = turn.turn_id as string;
  assert.deepEqual(Object.keys(turn), ["turn_id"]);

  const end = await turnCompleted(client, threadId, turnId);
  assert.equal(end.status, "completed");
  assert.ok((end.completed_at as number) >= (started.created_at as number));
  // (turn/started may arrive before or after the turn/start response; the spec does not order them.)
  await client.notification("turn/started", (p) => p.thread_id === threadId && p.turn_id === turnId);

  const progress = client.notifications("item/progress").filter((p) => p.turn_id === turnId);
  const deltas = progress.map((p) => p.delta as { type: string; text?: string; thinking?: string });
  assert.deepEqual(
    deltas.filter((d) => d.type === "thinking").map((d) => d.thinking),
    ["Let me ", "look around."],
  );
  assert.deepEqual(
    deltas.filter((d) => d.type === "text").map((d) => d.text),
    ["This project ", "prints a greeting ", "from index.js."],
  );

  // The prompt is not an item: the first one is the model's thinking.
  const items = createdItems(client, threadId);
  assert.deepEqual(
    items.map((i) => i.type),
    ["thinking", "tool_call", "tool_result", "text"],
  );
  assert.equal(items[0]!.thinking, "Let me look around.");
  assert.deepEqual([items[1]!.tool_use_id, items[1]!.name, items[1]!.input], ["toolu_list", "list_files", {}]);
  assert.equal(items[2]!.tool_use_id, "toolu_list");
  assert.equal(items[2]!.is_error, false);
  assert.match(String(items[2]!.content), /README\.md/);
  assert.equal(items[3]!.text, "This project prints a greeting from index.js.");
  assert.equal(end.items_count, items.length);
  const first = fake.requests.filter((r) => r.method === "POST").at(-2)!;
  assert.equal(first.path, "/v1/messages");
  // The document's default: claude-opus-4-6 with adaptive thinking (the Anthropic provider is in use).
  assert.equal(first.body.model, "claude-opus-4-6");
  assert.deepEqual(first.body.thinking, { type: "adaptive" });

  const resumed = await client.call("thread/resume", { thread_id: threadId });
  assert.equal(resumed.cwd, workspace);
  assert.equal(resumed.permission_mode, "acceptEdits");
  const turns = resumed.turns as WireTurn[];
  assert.deepEqual(
    turns.map((t) => [t.id, t.status, t.user_content]),
    [[turnId, "completed", "List the files in this project and summarize what it does."]],
  );
  assert.deepEqual(turns[0]!.items, storedItems(client, threadId));
}

describe("the document's example session", () => {
  let fake: FakeModelServer;
  before(async () => {
    fake = await FakeModelServer.start();
  });
  after(() => fake.close());

  it("replays over stdio", async () => {
    const server = spawnServer(fake);
    try {
      await replayExample(TestClient.overStdio(server.child), fake);
    } finally {
      await server.kill();
    }
  });

  it("replays over WebSocket (--transport ws --port)", async () => {
    const port = await freePort();
    const server = spawnServer(fake, ["--transport", "ws", "--port", String(port)]);
    try {
      const url = await server.websocketUrl();
      assert.match(url, new RegExp(`:${port}\\b`));
      // Upstream clients connect to ws://host:N, the root path.
      const client = await TestClient.overWebSocket(url.replace(/\/ws$/, ""));
      await replayExample(client, fake);
      client.close();
    } finally {
      await server.kill();
    }
  });
});

// ---- a recorded session of the original ------------------------------------------------------
//
// The shapes below are written from sumansid/claude-app-server 1.0.4 (src/server.ts, src/types.ts,
// src/protocol.ts), not from Switchyard's output: each key the original sends, with its type.
// Extra keys are allowed (Switchyard adds some); a missing key or another type fails.

type Shape = "string" | "number" | "boolean" | "object" | "unknown" | { literal: unknown } | { arrayOf: Shape } | { [key: string]: Shape };

const lit = (value: unknown): Shape => ({ literal: value });
const arrayOf = (element: Shape): Shape => ({ arrayOf: element });

function assertShape(actual: unknown, shape: Shape, where: string): void {
  if (typeof shape === "string") {
    if (shape !== "unknown") assert.equal(typeof actual, shape, `${where}: expected a ${shape}, got ${JSON.stringify(actual)}`);
    return;
  }
  if ("literal" in shape && Object.keys(shape).length === 1) {
    assert.deepEqual(actual, shape.literal, where);
    return;
  }
  if ("arrayOf" in shape && Object.keys(shape).length === 1) {
    assert.ok(Array.isArray(actual), `${where}: expected an array, got ${JSON.stringify(actual)}`);
    (actual as unknown[]).forEach((element, i) => assertShape(element, shape.arrayOf as Shape, `${where}[${i}]`));
    return;
  }
  assert.ok(
    typeof actual === "object" && actual !== null && !Array.isArray(actual),
    `${where}: expected an object, got ${JSON.stringify(actual)}`,
  );
  for (const [key, inner] of Object.entries(shape as Record<string, Shape>)) {
    assert.ok(key in (actual as object), `${where}.${key} is missing (got ${JSON.stringify(actual)})`);
    assertShape((actual as Record<string, unknown>)[key], inner, `${where}.${key}`);
  }
}

/** The original's Item union (types.ts), by type. */
const ORIGINAL_ITEM: Record<string, Shape> = {
  text: { type: lit("text"), text: "string" },
  thinking: { type: lit("thinking"), thinking: "string" },
  tool_call: { type: lit("tool_call"), tool_use_id: "string", name: "string", input: "unknown" },
  tool_result: { type: lit("tool_result"), tool_use_id: "string", content: "string", is_error: "boolean" },
  file_change: { type: lit("file_change"), path: "string", operation: "string" },
  command_output: { type: lit("command_output"), command: "string", stdout: "string", stderr: "string", exit_code: "number" },
};

/** StoredItem: `{id, created_at, item}`, the content nested under `item`. */
function assertStoredItem(actual: unknown, where: string): void {
  assertShape(actual, { id: "string", created_at: "number", item: { type: "string" } }, where);
  const type = (actual as StoredItem).item.type;
  assert.ok(type in ORIGINAL_ITEM, `${where}.item.type "${type}" is not one of the original's`);
  assertShape((actual as StoredItem).item, ORIGINAL_ITEM[type]!, `${where}.item`);
}

const ORIGINAL = {
  initialize: {
    server: { name: lit("claude-app-server"), version: "string" },
    capabilities: {
      threads: lit(["start", "resume", "fork"]),
      turns: lit(["start", "steer", "interrupt"]),
      models: arrayOf("string"),
      skills: arrayOf("string"),
    },
  },
  initialized: { server: lit("claude-app-server") },
  modelList: { models: arrayOf({ id: "string", name: "string", aliases: arrayOf("string") }) },
  skillsList: { skills: arrayOf({ name: "string", description: "string", parameters: { type: lit("object"), properties: "object" } }) },
  appList: { apps: lit([]) },
  threadStart: { thread_id: "string", created_at: "number" },
  threadFork: { thread_id: "string", forked_from: "string", created_at: "number" },
  threadResume: { thread_id: "string", created_at: "number", cwd: "string", permission_mode: "string", turns: arrayOf({ id: "string" }) },
  historyTurn: {
    id: "string",
    thread_id: "string",
    status: "string",
    user_content: "string",
    items: arrayOf({ id: "string" }),
    created_at: "number",
    completed_at: "number",
  },
  turnStart: { turn_id: "string" },
  turnSteer: { turn_id: "string", note: "string" },
  turnInterrupt: { turn_id: "string", status: lit("interrupted") },
  turnStarted: { turn_id: "string", thread_id: "string" },
  textProgress: { turn_id: "string", delta: { type: lit("text"), text: "string" } },
  thinkingProgress: { turn_id: "string", delta: { type: lit("thinking"), thinking: "string" } },
  itemCreated: { turn_id: "string", item: { id: "string", created_at: "number", item: { type: "string" } } },
  turnCompleted: { turn_id: "string", thread_id: "string", status: "string", items_count: "number", completed_at: "number" },
} satisfies Record<string, Shape>;

/** The original's error codes (protocol.ts). */
const E = { MethodNotFound: -32601, NotInitialized: -32000, ThreadNotFound: -32001, TurnBusy: -32003, NoActiveTurn: -32004 };

/**
 * A session a client of the original runs (its test-client.mjs steps, then a turn with thinking
 * and a tool, a busy turn that is steered and interrupted, history and fork), checked against the
 * original's shapes at every step.
 */
async function replayOriginalSession(client: TestClient, fake: FakeModelServer): Promise<void> {
  const workspace = makeWorkspace({ "a.txt": "alpha\n" });
  const initialized = client.waitFor((m) => m.method === "initialized");
  const init = await client.call("initialize", { client: { name: "test-client", version: "1.0.0" }, cwd: workspace });
  assertShape(init, ORIGINAL.initialize, "initialize");
  assertShape((await initialized).params, ORIGINAL.initialized, "initialized");

  const models = await client.call("model/list");
  assertShape(models, ORIGINAL.modelList, "model/list");
  assert.deepEqual(
    (init.capabilities as { models: string[] }).models,
    (models.models as Array<{ id: string }>).map((m) => m.id),
  );
  const skills = await client.call("skills/list");
  assertShape(skills, ORIGINAL.skillsList, "skills/list");
  assert.deepEqual(
    (init.capabilities as { skills: string[] }).skills,
    (skills.skills as Array<{ name: string }>).map((m) => m.name),
  );
  assertShape(await client.call("app/list"), ORIGINAL.appList, "app/list");

  const thread = await client.call("thread/start", { cwd: workspace, permission_mode: "acceptEdits" });
  assertShape(thread, ORIGINAL.threadStart, "thread/start");
  const threadId = thread.thread_id as string;
  const empty = await client.call("thread/resume", { thread_id: threadId });
  assertShape(empty, ORIGINAL.threadResume, "thread/resume");
  assert.deepEqual(empty.turns, []);

  assert.equal((await client.request("nonexistent", {})).error?.code, E.MethodNotFound);
  assert.equal((await client.request("turn/steer", { thread_id: threadId, content: "hi" })).error?.code, E.NoActiveTurn);
  assert.equal((await client.request("turn/interrupt", { thread_id: threadId })).error?.code, E.NoActiveTurn);
  assert.equal((await client.request("thread/resume", { thread_id: "no-such-thread" })).error?.code, E.ThreadNotFound);

  // A turn with thinking, a tool call and an answer.
  fake.enqueue(
    {
      kind: "response",
      reasoning: ["Reading ", "it."],
      toolCalls: [{ id: "toolu_read", name: "read_file", arguments: { path: "a.txt" } }],
    },
    { kind: "response", text: ["It says ", "alpha."] },
  );
  const prompt = "What does a.txt say?";
  const turn = await client.call("turn/start", { thread_id: threadId, content: prompt });
  assertShape(turn, ORIGINAL.turnStart, "turn/start");
  const turnId = turn.turn_id as string;
  const end = await turnCompleted(client, threadId, turnId);
  assertShape(end, ORIGINAL.turnCompleted, "turn/completed");
  assert.equal(end.status, "completed");
  assertShape(await client.notification("turn/started", (p) => p.turn_id === turnId), ORIGINAL.turnStarted, "turn/started");
  const progress = client.notifications("item/progress").filter((p) => p.turn_id === turnId);
  const ofType = (type: string) => progress.filter((p) => (p.delta as { type: string }).type === type);
  assert.ok(ofType("text").length > 0 && ofType("thinking").length > 0);
  ofType("text").forEach((p, i) => assertShape(p, ORIGINAL.textProgress, `item/progress[text ${i}]`));
  ofType("thinking").forEach((p, i) => assertShape(p, ORIGINAL.thinkingProgress, `item/progress[thinking ${i}]`));
  const created = client.notifications("item/created").filter((p) => p.turn_id === turnId);
  created.forEach((p, i) => {
    assertShape(p, ORIGINAL.itemCreated, `item/created[${i}]`);
    assertStoredItem(p.item, `item/created[${i}].item`);
  });
  const contents = created.map((p) => (p.item as StoredItem).item);
  // The prompt is not an item, and items_count counts exactly what item/created sent.
  assert.deepEqual(
    contents.map((c) => c.type),
    ["thinking", "tool_call", "tool_result", "text"],
  );
  assert.deepEqual([contents[0]!.thinking, contents[1]!.name, contents[3]!.text], ["Reading it.", "read_file", "It says alpha."]);
  assert.equal(end.items_count, created.length);

  // A second turn held open: a third is refused, steering answers with a note, interrupt stops it.
  fake.enqueue({ kind: "response", text: ["partial ", "answer"], holdOpen: true });
  const busy = (await client.call("turn/start", { thread_id: threadId, content: "Keep going." })).turn_id as string;
  await client.notification("item/progress", (p) => p.turn_id === busy && (p.delta as { text?: string }).text === "answer");
  assert.equal((await client.request("turn/start", { thread_id: threadId, content: "again" })).error?.code, E.TurnBusy);
  assertShape(await client.call("turn/steer", { thread_id: threadId, content: "and briefly" }), ORIGINAL.turnSteer, "turn/steer");
  const interrupted = await client.call("turn/interrupt", { thread_id: threadId });
  assertShape(interrupted, ORIGINAL.turnInterrupt, "turn/interrupt");
  const stopped = await turnCompleted(client, threadId, busy);
  assertShape(stopped, ORIGINAL.turnCompleted, "turn/completed (interrupted)");
  assert.equal(stopped.status, "interrupted");

  // History: the turns as the original serializes them, items nested the same way as live.
  const resumed = await client.call("thread/resume", { thread_id: threadId });
  assertShape(resumed, ORIGINAL.threadResume, "thread/resume");
  const turns = resumed.turns as WireTurn[];
  turns.forEach((t, i) => {
    assertShape(t, ORIGINAL.historyTurn, `thread/resume.turns[${i}]`);
    t.items.forEach((item, j) => assertStoredItem(item, `thread/resume.turns[${i}].items[${j}]`));
  });
  assert.deepEqual(
    turns.map((t) => [t.id, t.thread_id, t.status, t.user_content]),
    [
      [turnId, threadId, "completed", prompt],
      [busy, threadId, "interrupted", "Keep going."],
    ],
  );
  assert.equal("error" in turns[0]!, false, "no error key on a turn that did not fail (the original leaves it undefined)");
  assert.deepEqual(
    turns[0]!.items,
    created.map((p) => p.item),
  );
  assert.deepEqual(
    turns[1]!.items.map((i) => i.item),
    [{ type: "text", text: "partial answer" }],
  );

  const fork = await client.call("thread/fork", { thread_id: threadId });
  assertShape(fork, ORIGINAL.threadFork, "thread/fork");
  assert.equal(fork.forked_from, threadId);
}

describe("a recorded session of the original (claude-app-server 1.0.4)", () => {
  let fake: FakeModelServer;
  before(async () => {
    fake = await FakeModelServer.start();
  });
  after(() => fake.close());

  it("replays over stdio", async () => {
    const server = spawnServer(fake);
    try {
      await replayOriginalSession(TestClient.overStdio(server.child), fake);
    } finally {
      await server.kill();
    }
  });

  it("replays over WebSocket at the root path with ?key= (--transport ws --port --token)", async () => {
    const port = await freePort();
    const server = spawnServer(fake, ["--transport", "ws", "--port", String(port), "--token", "pairing-key"]);
    try {
      const url = new URL(await server.websocketUrl());
      const root = `ws://${url.host}/`;
      await assert.rejects(TestClient.overWebSocket(root), /401/);
      const client = await TestClient.overWebSocket(`${root}?key=pairing-key`);
      await replayOriginalSession(client, fake);
      client.close();
    } finally {
      await server.kill();
    }
  });

  it("before initialize, a server forced to this face (--face claude) answers -32000", async () => {
    const server = spawnServer(fake, ["--face", "claude"]);
    try {
      const client = TestClient.overStdio(server.child);
      assert.equal((await client.request("model/list", {})).error?.code, E.NotInitialized);
    } finally {
      await server.kill();
    }
  });
});

describe("handshake, discovery and errors", () => {
  let fake: FakeModelServer;
  let server: ServerProcess;
  let client: TestClient;
  before(async () => {
    fake = await FakeModelServer.start();
    server = spawnServer(fake);
    client = TestClient.overStdio(server.child);
  });
  after(async () => {
    await server.kill();
    await fake.close();
  });

  it("before the dialect is chosen, refuses requests as not initialized (-32002); a second initialize is answered again, as the original does", async () => {
    // No initialize has chosen a dialect yet, so the server answers in the default one's code
    // (with --dialect claude it is -32000: see "is also served when forced").
    assert.equal((await client.request("model/list", {})).error?.code, -32002);
    await initialize(client, { permission_mode: "default" });
    const again = await client.call("initialize", { client: { name: "again" }, permission_mode: "default" });
    assert.equal((again.server as Params).name, "claude-app-server");
  });

  it("lists models, skills and apps", async () => {
    const models = (await client.call("model/list")).models as Array<{ id: string; name: string; aliases: string[]; display_name: string }>;
    const opus = models.find((m) => m.id === "claude-opus-4-6")!;
    assert.deepEqual([opus.name, opus.aliases, opus.display_name], ["Claude Opus 4.6", ["opus"], "Claude Opus 4.6"]);
    assert.ok(models.every((m) => typeof m.name === "string" && Array.isArray(m.aliases)));
    const skills = (await client.call("skills/list")).skills as Array<{
      name: string;
      description: string;
      parameters: { type: string; properties: Record<string, unknown> };
      needs_approval: boolean;
    }>;
    const approval = Object.fromEntries(skills.map((s) => [s.name, s.needs_approval]));
    assert.deepEqual([approval.read_file, approval.write_file, approval.bash], [false, true, true]);
    assert.ok(skills.every((s) => s.description.length > 0 && s.parameters.type === "object"));
    assert.ok("command" in skills.find((s) => s.name === "bash")!.parameters.properties);
    assert.deepEqual(await client.call("app/list"), { apps: [] });
  });

  it("answers bad params with -32602 and unknown threads with -32001", async () => {
    const bad = await client.request("turn/start", { thread_id: 5, content: "hi" });
    assert.equal(bad.error?.code, -32602);
    assert.ok(Array.isArray((bad.error!.data as { issues: unknown[] }).issues));
    const empty = await client.request("turn/start", { thread_id: "thread_x", content: "" });
    assert.equal(empty.error?.code, -32602);
    const mode = await client.request("thread/start", { permission_mode: "yolo" });
    assert.equal(mode.error?.code, -32602);
    const unknown = await client.request("approval/respond", { request_id: "approval_nope", approved: true });
    assert.equal(unknown.error?.code, -32602);
    assert.match(unknown.error!.message, /Unknown request_id "approval_nope"/);
    assert.equal((await client.request("thread/resume", { thread_id: "thread_missing" })).error?.code, -32001);
    assert.equal((await client.request("turn/start", { thread_id: "thread_missing", content: "hi" })).error?.code, -32001);
    assert.equal((await client.request("no/such/method", {})).error?.code, -32601);
    assert.equal((await client.request("thread/start", { cwd: "/definitely/not/here" })).error?.code, -32602);
  });

  it("answers an initialize waiting at start before the runtime is up, as the runtime would, and serves requests sent right behind it", async () => {
    // The model catalog comes from the fake model's GET /v1/models here, as the runtime's does.
    const early = spawnServer(fake);
    try {
      const c = TestClient.overStdio(early.child);
      const answer = c.waitFor((m) => m.id === "init");
      const initialized = c.waitFor((m) => m.method === "initialized");
      const started = c.waitFor((m) => m.id === "start");
      c.sendRaw(JSON.stringify({ jsonrpc: "2.0", id: "init", method: "initialize", params: { client: { name: "pipelined" } } }));
      c.sendRaw(JSON.stringify({ jsonrpc: "2.0", id: "start", method: "thread/start", params: {} }));
      const caps = (await answer).result!.capabilities as { models: string[]; skills: string[] };
      assert.match((await started).result!.thread_id as string, /^thread_/);
      await initialized;
      assert.ok(indexOf(c, (m) => m.method === "initialized") > indexOf(c, (m) => m.id === "init"), "initialized comes after the response");
      const models = (await c.call("model/list", {})).models as Array<{ id: string }>;
      const skills = (await c.call("skills/list", {})).skills as Array<{ name: string }>;
      assert.ok(caps.models.length > 0, "the catalog lists models");
      assert.deepEqual(
        caps.models,
        models.map((m) => m.id),
      );
      assert.deepEqual(
        caps.skills,
        skills.map((s) => s.name),
      );
    } finally {
      await early.kill();
    }
  });

  it("lists models in initialize without asking a models endpoint on another machine; model/list asks it", async (t) => {
    const remote = await startRemoteModelsEndpoint(["claude-listed-remotely"]);
    if (!remote) return t.skip("this machine has no address besides loopback");
    const server = ServerProcess.spawn({ env: { ANTHROPIC_API_KEY: "k", ANTHROPIC_BASE_URL: remote.baseURL } });
    try {
      const c = TestClient.overStdio(server.child);
      const first = (await c.call("initialize", { client: { name: "remote" } })).capabilities as { models: string[] };
      assert.deepEqual(
        first.models,
        knownModels("anthropic").map((m) => m.id),
      );
      assert.equal(remote.listings, 0, "initialize asked the remote endpoint");
      const listed = (await c.call("model/list", {})).models as Array<{ id: string }>;
      assert.ok(listed.some((m) => m.id === "claude-listed-remotely"));
      assert.equal(remote.listings, 1);
      // A later initialize lists what model/list fetched, without asking again.
      const again = (await c.call("initialize", { client: { name: "remote" } })).capabilities as { models: string[] };
      assert.ok(again.models.includes("claude-listed-remotely"));
      assert.equal(remote.listings, 1);
    } finally {
      await server.kill();
      await remote.close();
    }
  });

  it("initialize {} and initialize without params choose this dialect (the upstream test-real.mjs opens so)", async () => {
    for (const withParams of [true, false]) {
      const plain = spawnServer(fake);
      try {
        const c = TestClient.overStdio(plain.child);
        const reply = c.waitFor((m) => m.id === "init");
        c.sendRaw(JSON.stringify({ jsonrpc: "2.0", id: "init", method: "initialize", ...(withParams ? { params: {} } : {}) }));
        assert.equal(((await reply).result?.server as Params).name, "claude-app-server");
        assert.match((await c.call("thread/start", {})).thread_id as string, /^thread_/);
      } finally {
        await plain.kill();
      }
    }
  });

  it("answers the in-flight cap with -32005, since -32001 means thread not found in this dialect", async () => {
    const capped = spawnServer(fake, ["--max-in-flight", "1"]);
    try {
      const c = TestClient.overStdio(capped.child);
      await initialize(c);
      // A batch dispatches both at once: the second finds the first still in flight.
      c.sendRaw(
        JSON.stringify([
          { jsonrpc: "2.0", id: "a", method: "app/list", params: {} },
          { jsonrpc: "2.0", id: "b", method: "app/list", params: {} },
        ]),
      );
      const [a, b] = await Promise.all([c.waitFor((m) => m.id === "a"), c.waitFor((m) => m.id === "b")]);
      assert.deepEqual(a.result, { apps: [] });
      assert.equal(b.error?.code, -32005);
      assert.deepEqual(b.error?.data, { reason: "inFlightLimit", limit: 1 });
    } finally {
      await capped.kill();
    }
  });

  it("the default model applies only when nothing names one: a configured model and a per-turn alias win, without adaptive thinking", async () => {
    const configured = spawnServer(fake, ["--model", "claude-sonnet-4-6"]);
    try {
      const c = TestClient.overStdio(configured.child);
      await initialize(c, { cwd: makeWorkspace() });
      const threadId = (await c.call("thread/start", {})).thread_id as string;
      const posts = () => fake.requests.filter((r) => r.method === "POST");
      fake.enqueue({ kind: "response", text: "configured" }, { kind: "response", text: "aliased" });
      await turnCompleted(c, threadId, (await c.call("turn/start", { thread_id: threadId, content: "one" })).turn_id as string);
      assert.equal(posts().at(-1)!.body.model, "claude-sonnet-4-6");
      assert.equal(posts().at(-1)!.body.thinking, undefined);
      await turnCompleted(
        c,
        threadId,
        (await c.call("turn/start", { thread_id: threadId, content: "two", model: "sonnet" })).turn_id as string,
      );
      assert.equal(posts().at(-1)!.body.model, "claude-sonnet-4-6");
      assert.equal(posts().at(-1)!.body.thinking, undefined);
    } finally {
      await configured.kill();
    }
  });

  it("is also served when forced with --dialect claude (the original's flag, an alias of --face)", async () => {
    const forced = spawnServer(fake, ["--dialect", "claude"]);
    try {
      const c = TestClient.overStdio(forced.child);
      assert.equal((await c.request("thread/start", {})).error?.code, -32000);
      const init = await c.call("initialize", {});
      assert.equal((init.server as Params).name, "claude-app-server");
    } finally {
      await forced.kill();
    }
  });
});

describe("permissions and approvals", () => {
  let fake: FakeModelServer;
  let server: ServerProcess;
  let client: TestClient;
  let workspace: string;
  before(async () => {
    fake = await FakeModelServer.start();
    server = spawnServer(fake);
    client = TestClient.overStdio(server.child);
    workspace = makeWorkspace();
    // thread/start without cwd uses this one.
    await initialize(client, { cwd: workspace, permission_mode: "default" });
  });
  after(async () => {
    await server.kill();
    await fake.close();
  });

  async function startTurn(threadId: string, content: string): Promise<string> {
    return (await client.call("turn/start", { thread_id: threadId, content })).turn_id as string;
  }

  it("asks before bash in default mode; approved, the command runs", async () => {
    fake.enqueue(
      {
        kind: "response",
        toolCalls: [{ id: "toolu_ok", name: "bash", arguments: { command: "echo approved > approved.txt && echo ran" } }],
      },
      { kind: "response", text: "done" },
    );
    const threadId = (await client.call("thread/start", {})).thread_id as string;
    const turnId = await startTurn(threadId, "run it");
    const request = await client.notification("approval/request", (p) => p.thread_id === threadId);
    assert.equal(request.turn_id, turnId);
    assert.equal(request.tool_name, "bash");
    assert.deepEqual(request.input, { command: "echo approved > approved.txt && echo ran" });
    assert.match(String(request.description), /shell command: echo approved/);
    // The tool call the request refers to was announced first.
    const callIndex = indexOf(
      client,
      (m) => m.method === "item/created" && (m.params?.item as StoredItem | undefined)?.item.tool_use_id === "toolu_ok",
    );
    assert.ok(callIndex >= 0 && callIndex < indexOf(client, (m) => m.method === "approval/request" && m.params?.thread_id === threadId));

    assert.deepEqual(await client.call("approval/respond", { request_id: request.request_id, approved: true }), {
      ok: true,
      thread_id: threadId,
      approved: true,
      permission_mode: "default",
      note: "The tool call runs.",
    });
    assert.equal((await turnCompleted(client, threadId, turnId)).status, "completed");
    assert.ok(fs.existsSync(path.join(workspace, "approved.txt")));
    const output = createdItems(client, threadId).find((i) => i.type === "command_output")!;
    assert.deepEqual(
      [output.command, output.stdout, output.stderr, output.exit_code],
      ["echo approved > approved.txt && echo ran", "ran\n", "", 0],
    );
    // An answered request cannot be answered again.
    assert.equal((await client.request("approval/respond", { request_id: request.request_id, approved: true })).error?.code, -32602);
  });

  it("refused, the command does not run and the turn still completes", async () => {
    fake.enqueue(
      { kind: "response", toolCalls: [{ id: "toolu_no", name: "bash", arguments: { command: "touch refused.txt" } }] },
      { kind: "response", text: "understood" },
    );
    const threadId = (await client.call("thread/start", { cwd: workspace, permission_mode: "default" })).thread_id as string;
    const turnId = await startTurn(threadId, "run it");
    const request = await client.notification("approval/request", (p) => p.thread_id === threadId);
    await client.call("approval/respond", { request_id: request.request_id, approved: false });
    assert.equal((await turnCompleted(client, threadId, turnId)).status, "completed");
    assert.equal(fs.existsSync(path.join(workspace, "refused.txt")), false);
    const items = createdItems(client, threadId);
    const result = items.find((i) => i.type === "tool_result" && i.tool_use_id === "toolu_no")!;
    assert.equal(result.is_error, true);
    assert.match(String(result.content), /declined/);
    assert.equal(
      items.some((i) => i.type === "command_output"),
      false,
    );
    assert.equal(items.at(-1)!.text, "understood");
  });

  it("acceptEdits writes files without asking but still asks for bash", async () => {
    fake.enqueue(
      {
        kind: "response",
        toolCalls: [
          { id: "toolu_write", name: "write_file", arguments: { path: "notes.txt", content: "hello\n" } },
          { id: "toolu_cat", name: "bash", arguments: { command: "cat notes.txt" } },
        ],
      },
      { kind: "response", text: "written" },
    );
    const threadId = (await client.call("thread/start", { permission_mode: "acceptEdits" })).thread_id as string;
    const turnId = await startTurn(threadId, "write and show");
    const request = await client.notification("approval/request", (p) => p.thread_id === threadId);
    assert.equal(request.tool_name, "bash");
    assert.equal(fs.readFileSync(path.join(workspace, "notes.txt"), "utf8"), "hello\n", "written before bash was asked");
    await client.call("approval/respond", { request_id: request.request_id, approved: true });
    assert.equal((await turnCompleted(client, threadId, turnId)).status, "completed");
    assert.equal(client.notifications("approval/request").filter((p) => p.thread_id === threadId).length, 1);
    const items = createdItems(client, threadId);
    const change = items.find((i) => i.type === "file_change")!;
    assert.deepEqual([change.path, change.operation], ["notes.txt", "create"]);
    assert.match(String(change.diff), /\+hello/);
    assert.equal(items.find((i) => i.type === "command_output")!.stdout, "hello\n");
  });

  it("bypassPermissions asks nothing", async () => {
    fake.enqueue(
      { kind: "response", toolCalls: [{ id: "toolu_bypass", name: "bash", arguments: { command: "touch bypass.txt" } }] },
      { kind: "response", text: "ok" },
    );
    const threadId = (await client.call("thread/start", { permission_mode: "bypassPermissions" })).thread_id as string;
    const turnId = await startTurn(threadId, "go");
    assert.equal((await turnCompleted(client, threadId, turnId)).status, "completed");
    assert.ok(fs.existsSync(path.join(workspace, "bypass.txt")));
    assert.equal(
      client.notifications("approval/request").some((p) => p.thread_id === threadId),
      false,
    );
    assert.equal((await client.call("thread/resume", { thread_id: threadId })).permission_mode, "bypassPermissions");
  });
});

describe("turn control and fork", () => {
  let fake: FakeModelServer;
  let server: ServerProcess;
  let client: TestClient;
  let workspace: string;
  before(async () => {
    fake = await FakeModelServer.start();
    server = spawnServer(fake);
    client = TestClient.overStdio(server.child);
    workspace = makeWorkspace();
    await initialize(client, { cwd: workspace });
  });
  after(async () => {
    await server.kill();
    await fake.close();
  });

  const newThread = async (): Promise<string> => (await client.call("thread/start", {})).thread_id as string;
  const runTurn = async (threadId: string, content: unknown): Promise<string> => {
    const turnId = (await client.call("turn/start", { thread_id: threadId, content })).turn_id as string;
    await turnCompleted(client, threadId, turnId);
    return turnId;
  };

  it("turn/steer reaches the model at its next request", async () => {
    fake.enqueue(
      { kind: "response", toolCalls: [{ id: "toolu_steer", name: "bash", arguments: { command: "echo steady" } }] },
      { kind: "response", text: "bananas noted" },
    );
    const threadId = await newThread();
    const turnId = (await client.call("turn/start", { thread_id: threadId, content: [{ type: "text", text: "run something" }] }))
      .turn_id as string;
    // The approval wait holds the turn open while we steer.
    const request = await client.notification("approval/request", (p) => p.thread_id === threadId);
    const steered = await client.call("turn/steer", { thread_id: threadId, content: "Also mention bananas." });
    assert.equal(steered.turn_id, turnId);
    assert.equal(typeof steered.note, "string");
    const next = fake.requests.length;
    await client.call("approval/respond", { request_id: request.request_id, approved: true });
    assert.equal((await turnCompleted(client, threadId, turnId)).status, "completed");
    assert.equal(fake.requests.length, next + 1);
    assert.match(JSON.stringify(fake.requests[next]!.body.messages), /Also mention bananas\./);
    // Neither the prompt nor the steering is an item; history keeps both as text.
    assert.equal(
      createdItems(client, threadId).some((i) => i.type === "user"),
      false,
    );
    const [turn] = (await client.call("thread/resume", { thread_id: threadId })).turns as WireTurn[];
    assert.deepEqual([turn!.user_content, turn!.steered_content], ["run something", ["Also mention bananas."]]);
    // Nothing runs now.
    assert.equal((await client.request("turn/steer", { thread_id: threadId, content: "late" })).error?.code, -32004);
    assert.equal((await client.request("turn/interrupt", { thread_id: threadId })).error?.code, -32004);
  });

  it("turn/interrupt ends a streaming turn as interrupted", async () => {
    fake.enqueue({ kind: "response", text: ["partial ", "answer"], holdOpen: true });
    const threadId = await newThread();
    const turnId = (await client.call("turn/start", { thread_id: threadId, content: "go" })).turn_id as string;
    await client.notification("item/progress", (p) => p.turn_id === turnId && (p.delta as { text: string }).text === "answer");
    assert.deepEqual(await client.call("turn/interrupt", { thread_id: threadId }), { turn_id: turnId, status: "interrupted" });
    const end = await turnCompleted(client, threadId, turnId);
    assert.equal(end.status, "interrupted");
    assert.equal(createdItems(client, threadId).find((i) => i.type === "text")!.text, "partial answer");
  });

  it("a failed turn sends turn/error (error a string), then turn/completed with status error", async () => {
    fake.enqueue({ kind: "error", status: 401, message: "invalid x-api-key" });
    const threadId = await newThread();
    const turnId = (await client.call("turn/start", { thread_id: threadId, content: "hi" })).turn_id as string;
    const end = await turnCompleted(client, threadId, turnId);
    assert.equal(end.status, "error");
    const error = await client.notification("turn/error", (p) => p.turn_id === turnId);
    assert.equal(typeof error.error, "string");
    assert.match(error.error as string, /invalid x-api-key/);
    assert.equal(error.error_code, "authentication");
    const [turn] = (await client.call("thread/resume", { thread_id: threadId })).turns as WireTurn[];
    assert.deepEqual([turn!.status, turn!.error, turn!.error_code], ["error", error.error, "authentication"]);
    assert.ok(
      indexOf(client, (m) => m.method === "turn/error" && m.params?.turn_id === turnId) <
        indexOf(client, (m) => m.method === "turn/completed" && m.params?.turn_id === turnId),
    );
  });

  it("thread/fork at_turn_id copies exactly the turns up to it", async () => {
    fake.enqueue(
      { kind: "response", text: "alpha reply" },
      { kind: "response", text: "beta reply" },
      { kind: "response", text: "gamma reply" },
    );
    const source = await newThread();
    await runTurn(source, "alpha");
    const second = await runTurn(source, "beta");
    await runTurn(source, "gamma");

    const fork = await client.call("thread/fork", { thread_id: source, at_turn_id: second });
    assert.notEqual(fork.thread_id, source);
    assert.equal(fork.forked_from, source);
    assert.equal(typeof fork.created_at, "number");
    const forkId = fork.thread_id as string;
    // Following the fork does not replay its copied history as live notifications.
    assert.equal(
      client.notifications("turn/completed").some((p) => p.thread_id === forkId),
      false,
    );

    const strip = (turns: WireTurn[]) =>
      turns.map((t) => ({ status: t.status, user_content: t.user_content, items: t.items.map((i) => i.item) }));
    const sourceTurns = (await client.call("thread/resume", { thread_id: source })).turns as WireTurn[];
    const resumed = await client.call("thread/resume", { thread_id: forkId });
    assert.equal(resumed.forked_from, source);
    const forkTurns = resumed.turns as WireTurn[];
    assert.equal(forkTurns.length, 2);
    assert.deepEqual(strip(forkTurns), strip(sourceTurns.slice(0, 2)));

    // The fork continues from its own history.
    fake.enqueue({ kind: "response", text: "delta reply" });
    await runTurn(forkId, "delta");
    const sent = JSON.stringify(fake.requests.at(-1)!.body.messages);
    assert.match(sent, /beta reply/);
    assert.doesNotMatch(sent, /gamma/);

    assert.equal((await client.request("thread/fork", { thread_id: source, at_turn_id: "turn_unknown" })).error?.code, -32602);
  });

  it("thread/fork of a thread without turns, without at_turn_id, gives an empty copy", async () => {
    const source = await newThread();
    const fork = await client.call("thread/fork", { thread_id: source });
    assert.equal(fork.forked_from, source);
    const resumed = await client.call("thread/resume", { thread_id: fork.thread_id });
    assert.deepEqual(resumed.turns, []);
  });
});

describe("threads crossing dialects", () => {
  let fake: FakeModelServer;
  let server: ServerProcess;
  let appServer: TestClient;
  let claude: TestClient;
  before(async () => {
    fake = await FakeModelServer.start();
    server = spawnServer(fake, ["--listen", "ws://127.0.0.1:0"]);
    const url = await server.websocketUrl();
    appServer = await TestClient.overWebSocket(url);
    await appServer.initialize();
    claude = await TestClient.overWebSocket(url);
    await initialize(claude);
  });
  after(async () => {
    appServer.close();
    claude.close();
    await server.kill();
    await fake.close();
  });

  it("an AppServer thread is resumed and continued by a claude client", async () => {
    const workspace = makeWorkspace();
    fake.enqueue({ kind: "response", text: "appserver answer" }, { kind: "response", text: "claude answer" });
    const threadId = ((await appServer.call("thread/start", threadStartParams(workspace))).thread as { id: string }).id;
    await appServer.call("turn/start", { threadId, input: text("hello from appserver") });
    assert.equal((await appServer.turnEnd(threadId)).method, "turn/completed");

    const resumed = await claude.call("thread/resume", { thread_id: threadId });
    assert.equal(resumed.cwd, workspace);
    assert.equal(resumed.permission_mode, "default");
    const turns = resumed.turns as WireTurn[];
    assert.equal(turns.length, 1);
    assert.equal(turns[0]!.user_content, "hello from appserver");
    assert.deepEqual(
      turns[0]!.items.map((i) => [i.item.type, i.item.text]),
      [["text", "appserver answer"]],
    );

    const turnId = (await claude.call("turn/start", { thread_id: threadId, content: "and from claude" })).turn_id as string;
    assert.equal((await turnCompleted(claude, threadId, turnId)).status, "completed");
    assert.match(JSON.stringify(fake.requests.at(-1)!.body.messages), /appserver answer/);
    assert.equal(createdItems(claude, threadId).at(-1)!.text, "claude answer");
    // The AppServer client, still subscribed, saw the claude client's turn too.
    const end = await appServer.turnEnd(threadId, turnId);
    assert.equal(end.method, "turn/completed");
  });

  it("image content blocks reach the runtime as image input parts (base64 as a data: URL)", async () => {
    const workspace = makeWorkspace();
    fake.enqueue({ kind: "response", text: "a cat" });
    const threadId = (await claude.call("thread/start", { cwd: workspace })).thread_id as string;
    const content = [
      { type: "text", text: "What is in these?" },
      { type: "image", source: { type: "base64", media_type: "image/png", data: "iVBORw0KGgo=" } },
      { type: "image", source: { type: "url", url: "https://example.com/cat.png" } },
    ];
    const turnId = (await claude.call("turn/start", { thread_id: threadId, content })).turn_id as string;
    assert.equal((await turnCompleted(claude, threadId, turnId)).status, "completed");
    const read = (await appServer.call("thread/read", { threadId })).thread as {
      turns: Array<{ items: Array<{ type: string; payload: { input?: unknown } }> }>;
    };
    const user = read.turns[0]!.items.find((i) => i.type === "userMessage")!;
    assert.deepEqual(user.payload.input, [
      { type: "text", text: "What is in these?" },
      { type: "image", url: "data:image/png;base64,iVBORw0KGgo=" },
      { type: "image", url: "https://example.com/cat.png" },
    ]);
    const [turn] = (await claude.call("thread/resume", { thread_id: threadId })).turns as WireTurn[];
    assert.equal(turn!.user_content, "What is in these?");
    // A block of another type is still refused.
    const bad = await claude.request("turn/start", { thread_id: threadId, content: [{ type: "document", source: {} }] });
    assert.equal(bad.error?.code, -32602);
  });

  it("a claude thread is read by an AppServer client", async () => {
    const workspace = makeWorkspace();
    fake.enqueue({ kind: "response", text: "claude first" });
    const threadId = (await claude.call("thread/start", { cwd: workspace, permission_mode: "bypassPermissions" })).thread_id as string;
    const turnId = (await claude.call("turn/start", { thread_id: threadId, content: "start here" })).turn_id as string;
    await turnCompleted(claude, threadId, turnId);

    const read = (await appServer.call("thread/read", { threadId })).thread as {
      originChannel: string;
      workspacePath: string;
      configuration: { approvalPolicy: string };
      turns: Array<{ id: string; status: string; items: Array<{ type: string; payload: { text: string } }> }>;
    };
    assert.equal(read.originChannel, "claude-app-server");
    assert.equal(read.workspacePath, workspace);
    assert.equal(read.configuration.approvalPolicy, "autoApprove");
    assert.deepEqual(
      read.turns.map((t) => [t.id, t.status]),
      [[turnId, "completed"]],
    );
    assert.deepEqual(
      read.turns[0]!.items.map((i) => [i.type, i.payload.text]),
      [
        ["userMessage", "start here"],
        ["agentMessage", "claude first"],
      ],
    );
  });
});
