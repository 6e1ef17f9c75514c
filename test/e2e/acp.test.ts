// `switchyard acp` end to end: an ACP client written with the official SDK drives the built CLI
// over real stdio, against the fake model server.
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { Readable, Writable } from "node:stream";
import { after, before, describe, it } from "node:test";
import * as acp from "@agentclientprotocol/sdk";
import { FakeModelServer } from "../support/fake-model-server.js";
import { startRemoteModelsEndpoint } from "../support/remote-models-endpoint.js";
import { makeWorkspace, modelEnv } from "../support/harness.js";
import { ServerProcess, tempDir } from "../support/server-process.js";
import { TestClient } from "../support/test-client.js";

type PermissionHandler = (request: acp.RequestPermissionRequest) => acp.RequestPermissionResponse | Promise<acp.RequestPermissionResponse>;

interface ClientFs {
  files: Map<string, string>;
  writes: Array<{ path: string; content: string }>;
  terminals: acp.CreateTerminalRequest[];
}

/** One `switchyard acp` process and an SDK client connected to its stdio. */
class AcpHarness {
  readonly notifications: acp.SessionNotification[] = [];
  readonly permissionRequests: acp.RequestPermissionRequest[] = [];
  onPermission: PermissionHandler = () => ({ outcome: { outcome: "cancelled" } });
  private waiters: Array<() => void> = [];

  private constructor(
    private readonly listening: boolean,
    readonly server: ProcessLike,
    readonly agent: acp.ClientContext,
    readonly connection: acp.ClientConnection,
  ) {}

  static start(
    fake: FakeModelServer,
    opts: { dataDir?: string; args?: string[]; clientFs?: ClientFs; env?: Record<string, string> } = {},
  ): AcpHarness {
    const server = ServerProcess.spawn({
      command: "acp",
      args: ["--provider", "openai-chat", "--model", "gpt-4o", ...(opts.args ?? [])],
      env: { ...modelEnv(fake), ...opts.env },
      ...(opts.dataDir ? { dataDir: opts.dataDir } : {}),
    });
    let harness!: AcpHarness;
    const app = acp
      .client({ name: "test-client" })
      .onNotification(acp.methods.client.session.update, ({ params }) => {
        harness.notifications.push(params);
        for (const wake of harness.waiters.splice(0)) wake();
      })
      .onRequest(acp.methods.client.session.requestPermission, async ({ params }) => {
        harness.permissionRequests.push(params);
        return harness.onPermission(params);
      });
    const clientFs = opts.clientFs;
    if (clientFs) {
      let nextTerminal = 1;
      app
        .onRequest(acp.methods.client.fs.readTextFile, ({ params }) => {
          const content = clientFs.files.get(params.path);
          if (content === undefined) throw acp.RequestError.resourceNotFound(params.path);
          return { content };
        })
        .onRequest(acp.methods.client.fs.writeTextFile, ({ params }) => {
          clientFs.writes.push({ path: params.path, content: params.content });
          clientFs.files.set(params.path, params.content);
          return {};
        })
        .onRequest(acp.methods.client.terminal.create, ({ params }) => {
          clientFs.terminals.push(params);
          return { terminalId: `term_${nextTerminal++}` };
        })
        .onRequest(acp.methods.client.terminal.waitForExit, () => ({ exitCode: 0 }))
        .onRequest(acp.methods.client.terminal.output, () => ({
          output: "output from the editor's terminal\n",
          truncated: false,
          exitStatus: { exitCode: 0 },
        }))
        .onRequest(acp.methods.client.terminal.release, () => ({}))
        .onRequest(acp.methods.client.terminal.kill, () => ({}));
    }
    const stream = acp.ndJsonStream(
      Writable.toWeb(server.child.stdin) as WritableStream<Uint8Array>,
      Readable.toWeb(server.child.stdout) as ReadableStream<Uint8Array>,
    );
    const connection = app.connect(stream);
    harness = new AcpHarness((opts.args ?? []).includes("--listen"), server, connection.agent, connection);
    return harness;
  }

  initialize(clientCapabilities: acp.ClientCapabilities = {}): Promise<acp.InitializeResponse> {
    return this.agent.request(acp.methods.agent.initialize, {
      protocolVersion: acp.PROTOCOL_VERSION,
      clientCapabilities,
      clientInfo: { name: "test-client", version: "0" },
    });
  }

  async newSession(cwd: string): Promise<acp.NewSessionResponse> {
    return this.agent.request(acp.methods.agent.session.new, { cwd, mcpServers: [] });
  }

  prompt(sessionId: string, text: string): Promise<acp.PromptResponse> {
    return this.agent.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text }] });
  }

  updates(sessionId: string, from = 0): acp.SessionUpdate[] {
    return this.notifications
      .slice(from)
      .filter((n) => n.sessionId === sessionId)
      .map((n) => n.update);
  }

  /** Resolves with the first update (from index `from`) that matches. */
  async waitForUpdate(sessionId: string, match: (u: acp.SessionUpdate) => boolean, from = 0): Promise<acp.SessionUpdate> {
    for (;;) {
      const found = this.updates(sessionId, from).find(match);
      if (found) return found;
      if (this.server.child.exitCode !== null) throw new Error(`server exited:\n${this.server.stderr}`);
      await new Promise<void>((resolve) => this.waiters.push(resolve));
    }
  }

  /** Closes stdin; the server exits once idle (with a WebSocket listener, it is stopped by signal). */
  async close(): Promise<void> {
    this.connection.close();
    this.server.child.stdin.end();
    if (this.listening) void this.server.kill();
    const exited = await this.server.exited;
    if (exited.code !== 0 && exited.signal === null) throw new Error(`exit ${exited.code}:\n${this.server.stderr}`);
  }
}

type ProcessLike = ServerProcess;

function textOf(updates: acp.SessionUpdate[], kind: "agent_message_chunk" | "agent_thought_chunk" | "user_message_chunk"): string {
  return updates
    .filter((u): u is Extract<acp.SessionUpdate, { sessionUpdate: typeof kind }> => u.sessionUpdate === kind)
    .map((u) => (u.content.type === "text" ? u.content.text : ""))
    .join("");
}

function toolUpdates(updates: acp.SessionUpdate[], toolCallId: string): Array<acp.SessionUpdate & { toolCallId: string }> {
  return updates.filter(
    (u): u is acp.SessionUpdate & { toolCallId: string } =>
      (u.sessionUpdate === "tool_call" || u.sessionUpdate === "tool_call_update") && u.toolCallId === toolCallId,
  );
}

const allow: PermissionHandler = () => ({ outcome: { outcome: "selected", optionId: "allow_once" } });
const reject: PermissionHandler = () => ({ outcome: { outcome: "selected", optionId: "reject_once" } });

describe("switchyard acp", () => {
  let fake: FakeModelServer;
  let h: AcpHarness;
  let workspace: string;
  let dataDir: string;
  let sessionId: string;

  before(async () => {
    fake = await FakeModelServer.start();
    workspace = makeWorkspace({ "notes.txt": "one\ntwo\nthree\n" });
    dataDir = tempDir("acp-data");
    h = AcpHarness.start(fake, { dataDir });
  });
  after(async () => {
    await h.close().catch(() => {});
    await fake.close();
  });

  it("initialize advertises session loading, truthful prompt capabilities and no auth", async () => {
    const init = await h.initialize();
    assert.equal(init.protocolVersion, acp.PROTOCOL_VERSION);
    assert.equal(init.agentCapabilities?.loadSession, true);
    assert.equal(init.agentCapabilities?.promptCapabilities?.embeddedContext, true);
    assert.equal(init.agentCapabilities?.promptCapabilities?.image, false);
    assert.ok(init.agentCapabilities?.sessionCapabilities?.list);
    assert.deepEqual(init.authMethods, []);
    assert.equal(init.agentInfo?.name, "switchyard");
  });

  it("session/new starts a thread in cwd and advertises the modes", async () => {
    const created = await h.newSession(workspace);
    sessionId = created.sessionId;
    assert.match(sessionId, /./);
    assert.equal(created.modes?.currentModeId, "default");
    assert.deepEqual(
      created.modes?.availableModes.map((m) => m.id),
      ["default", "acceptEdits", "bypassPermissions", "plan"],
    );
    await assert.rejects(h.newSession(path.join(workspace, "missing")), (e: unknown) => (e as acp.RequestError).code === -32602);
  });

  it("a prompt streams thought and message chunks in order, then ends the turn", async () => {
    fake.enqueue({ kind: "response", reasoning: ["Let me ", "think"], text: ["Hel", "lo ", "there"], usage: { input: 120, output: 30 } });
    const from = h.notifications.length;
    const response = await h.prompt(sessionId, "say hello");
    assert.equal(response.stopReason, "end_turn");
    // Every update of the turn arrived before the answer.
    const updates = h.updates(sessionId, from);
    assert.equal(textOf(updates, "agent_thought_chunk"), "Let me think");
    assert.equal(textOf(updates, "agent_message_chunk"), "Hello there");
    const kinds = updates.map((u) => u.sessionUpdate).filter((k) => k.endsWith("_chunk"));
    assert.deepEqual(kinds, [
      "agent_thought_chunk",
      "agent_thought_chunk",
      "agent_message_chunk",
      "agent_message_chunk",
      "agent_message_chunk",
    ]);
    assert.equal(textOf(updates, "user_message_chunk"), "", "the client's own prompt is not echoed");
    const usage = updates.find((u) => u.sessionUpdate === "usage_update");
    assert.ok(usage && usage.sessionUpdate === "usage_update");
    assert.equal(usage.used, 150);
    assert.equal(usage.size, 128_000);
  });

  it("a shell tool call asks permission: allow runs it and streams the tool call", async () => {
    h.onPermission = allow;
    fake.enqueue({
      kind: "response",
      toolCalls: [{ id: "call_allow", name: "bash", arguments: { command: "echo hi-from-bash > out.txt; cat out.txt" } }],
    });
    fake.enqueue({ kind: "response", text: "ran it" });
    const from = h.notifications.length;
    assert.equal((await h.prompt(sessionId, "run it")).stopReason, "end_turn");

    const request = h.permissionRequests.at(-1)!;
    assert.equal(request.sessionId, sessionId);
    assert.equal(request.toolCall.toolCallId, "call_allow");
    assert.equal(request.toolCall.kind, "execute");
    assert.deepEqual(
      request.options.map((o) => o.kind),
      ["allow_once", "allow_always", "reject_once", "reject_always"],
    );

    const calls = toolUpdates(h.updates(sessionId, from), "call_allow");
    assert.equal(calls[0]!.sessionUpdate, "tool_call", "first mention is a tool_call");
    assert.ok(calls.slice(1).every((u) => u.sessionUpdate === "tool_call_update"));
    const last = calls.at(-1)! as acp.ToolCallUpdate;
    assert.equal(last.status, "completed");
    const shown = JSON.stringify(calls.map((c) => (c as acp.ToolCallUpdate).content ?? []));
    assert.match(shown, /hi-from-bash/);
    assert.equal(fs.readFileSync(path.join(workspace, "out.txt"), "utf8"), "hi-from-bash\n");
    assert.equal(textOf(h.updates(sessionId, from), "agent_message_chunk"), "ran it");
  });

  it("reject declines the command and the turn goes on", async () => {
    h.onPermission = reject;
    fake.enqueue({ kind: "response", toolCalls: [{ id: "call_reject", name: "bash", arguments: { command: "touch rejected.txt" } }] });
    fake.enqueue({ kind: "response", text: "ok, not running it" });
    const from = h.notifications.length;
    assert.equal((await h.prompt(sessionId, "run it")).stopReason, "end_turn");
    assert.equal(fs.existsSync(path.join(workspace, "rejected.txt")), false);
    const last = toolUpdates(h.updates(sessionId, from), "call_reject").at(-1) as acp.ToolCallUpdate;
    assert.equal(last.status, "failed");
    assert.match(JSON.stringify(last.content), /declined/);
  });

  it("allow_always and reject_always are remembered: the same command is not asked again", async () => {
    const run = async (command: string, id: string): Promise<void> => {
      fake.enqueue({ kind: "response", toolCalls: [{ id, name: "bash", arguments: { command } }] });
      fake.enqueue({ kind: "response", text: "next" });
      assert.equal((await h.prompt(sessionId, "run")).stopReason, "end_turn");
    };
    h.onPermission = () => ({ outcome: { outcome: "selected", optionId: "allow_always" } });
    const asked = h.permissionRequests.length;
    await run("echo always >> always.txt", "call_always_1");
    await run("echo always >> always.txt", "call_always_2");
    assert.equal(h.permissionRequests.length, asked + 1);
    assert.equal(fs.readFileSync(path.join(workspace, "always.txt"), "utf8"), "always\nalways\n");

    h.onPermission = () => ({ outcome: { outcome: "selected", optionId: "reject_always" } });
    await run("touch never.txt", "call_never_1");
    await run("touch never.txt", "call_never_2");
    assert.equal(h.permissionRequests.length, asked + 2);
    assert.equal(fs.existsSync(path.join(workspace, "never.txt")), false);
  });

  it("acceptEdits mode writes files without asking and shows the diff", async () => {
    const from = h.notifications.length;
    await h.agent.request(acp.methods.agent.session.setMode, { sessionId, modeId: "acceptEdits" });
    await h.waitForUpdate(sessionId, (u) => u.sessionUpdate === "current_mode_update" && u.currentModeId === "acceptEdits", from);
    const asked = h.permissionRequests.length;
    fake.enqueue({
      kind: "response",
      toolCalls: [{ id: "call_edit", name: "edit", arguments: { path: "notes.txt", oldString: "two", newString: "TWO" } }],
    });
    fake.enqueue({ kind: "response", text: "edited" });
    assert.equal((await h.prompt(sessionId, "shout two")).stopReason, "end_turn");
    assert.equal(h.permissionRequests.length, asked, "no permission asked in acceptEdits");
    assert.equal(fs.readFileSync(path.join(workspace, "notes.txt"), "utf8"), "one\nTWO\nthree\n");
    const calls = toolUpdates(h.updates(sessionId, from), "call_edit") as acp.ToolCallUpdate[];
    assert.equal(calls[0]!.kind, "edit");
    assert.deepEqual(calls[0]!.locations, [{ path: path.join(workspace, "notes.txt") }]);
    const diff = calls.flatMap((c) => c.content ?? []).find((c) => c.type === "diff");
    assert.ok(diff && diff.type === "diff");
    assert.equal(diff.path, path.join(workspace, "notes.txt"));
    assert.match(diff.oldText ?? "", /two/);
    assert.match(diff.newText, /TWO/);
    assert.equal(calls.at(-1)!.status, "completed");
    await h.agent.request(acp.methods.agent.session.setMode, { sessionId, modeId: "default" });
  });

  it("session/cancel ends a running prompt with stopReason cancelled", async () => {
    fake.enqueue({ kind: "response", text: ["partial"], holdOpen: true });
    const from = h.notifications.length;
    const prompt = h.prompt(sessionId, "talk forever");
    await h.waitForUpdate(sessionId, (u) => u.sessionUpdate === "agent_message_chunk", from);
    await h.agent.notify(acp.methods.agent.session.cancel, { sessionId });
    assert.equal((await prompt).stopReason, "cancelled");
  });

  it("a failed turn answers the prompt with a JSON-RPC error carrying the turn's error code", async () => {
    fake.enqueue({ kind: "error", status: 401, message: "bad key" });
    await assert.rejects(h.prompt(sessionId, "fail please"), (error: unknown) => {
      const e = error as acp.RequestError;
      assert.equal(e.code, -32603);
      assert.equal(typeof (e.data as { code?: unknown }).code, "string");
      return true;
    });
  });

  it("after a restart, session/load replays the history and an AppServer client shares the threads", async () => {
    await h.close();
    h = AcpHarness.start(fake, { dataDir, args: ["--listen", "ws://127.0.0.1:0"] });
    await h.initialize();
    const listed = await h.agent.request(acp.methods.agent.session.list, { cwd: workspace });
    assert.ok(listed.sessions.some((s) => s.sessionId === sessionId && s.cwd === workspace));

    const from = h.notifications.length;
    const loaded = await h.agent.request(acp.methods.agent.session.load, { sessionId, cwd: workspace, mcpServers: [] });
    assert.equal(loaded.modes?.currentModeId, "default");
    const replay = h.updates(sessionId, from);
    assert.match(textOf(replay, "user_message_chunk"), /say hello.*run it.*run it.*run.*shout two/s);
    assert.match(textOf(replay, "agent_message_chunk"), /Hello there/);
    assert.match(textOf(replay, "agent_thought_chunk"), /Let me think/);
    const replayedCall = toolUpdates(replay, "call_allow");
    assert.equal(replayedCall[0]!.sessionUpdate, "tool_call");
    assert.equal((replayedCall.at(-1) as acp.ToolCallUpdate).status, "completed");
    assert.ok(toolUpdates(replay, "call_edit").some((u) => (u as acp.ToolCallUpdate).content?.some((c) => c.type === "diff")));

    // An AppServer client on the same process sees the ACP session and watches it live.
    const appServer = await TestClient.overWebSocket(await h.server.websocketUrl());
    try {
      await appServer.initialize();
      const threads = (await appServer.call("thread/list", {})).data as Array<{ id: string }>;
      assert.ok(threads.some((t) => t.id === sessionId));
      await appServer.call("thread/subscribe", { threadId: sessionId });
      fake.enqueue({ kind: "response", text: "live for everyone" });
      const ended = appServer.turnEnd(sessionId);
      assert.equal((await h.prompt(sessionId, "once more")).stopReason, "end_turn");
      assert.equal((await ended).method, "turn/completed");

      // ... and a thread it starts is an ACP session too.
      const started = await appServer.call("thread/start", {
        identity: { channelName: "test", userId: "u", channelContext: "c", workspacePath: workspace },
        historyMode: "server",
      });
      const otherId = (started.thread as { id: string }).id;
      const again = await h.agent.request(acp.methods.agent.session.list, { cwd: workspace });
      assert.ok(again.sessions.some((s) => s.sessionId === otherId));
    } finally {
      appServer.close();
    }
  });
});

describe("switchyard acp with a client that offers its file system and terminal", () => {
  let fake: FakeModelServer;
  let h: AcpHarness;
  let workspace: string;
  const clientFs: ClientFs = { files: new Map(), writes: [], terminals: [] };

  before(async () => {
    fake = await FakeModelServer.start();
    workspace = makeWorkspace({ "a.txt": "on disk\n" });
    h = AcpHarness.start(fake, { clientFs });
    await h.initialize({ fs: { readTextFile: true, writeTextFile: true }, terminal: true });
  });
  after(async () => {
    await h.close().catch(() => {});
    await fake.close();
  });

  it("read_file, write_file and bash go through the client", async () => {
    const { sessionId } = await h.newSession(workspace);
    await h.agent.request(acp.methods.agent.session.setMode, { sessionId, modeId: "bypassPermissions" });
    clientFs.files.set(path.join(workspace, "a.txt"), "unsaved buffer text\n");
    fake.enqueue({
      kind: "response",
      toolCalls: [
        { id: "call_read", name: "read_file", arguments: { path: "a.txt" } },
        { id: "call_write", name: "write_file", arguments: { path: "b.txt", content: "written by the agent\n" } },
        { id: "call_term", name: "bash", arguments: { command: "make test" } },
      ],
    });
    fake.enqueue({ kind: "response", text: "done" });
    const from = h.notifications.length;
    assert.equal((await h.prompt(sessionId, "go")).stopReason, "end_turn");

    // The model saw the editor's buffer, not the disk.
    const toolMessages = (fake.requests.at(-1)!.body as { messages: Array<{ role: string; content: string }> }).messages.filter(
      (m) => m.role === "tool",
    );
    assert.match(toolMessages[0]!.content, /unsaved buffer text/);
    // The write went to the editor, not the disk.
    assert.deepEqual(clientFs.writes, [{ path: path.join(workspace, "b.txt"), content: "written by the agent\n" }]);
    assert.equal(fs.existsSync(path.join(workspace, "b.txt")), false);
    // The command ran in the editor's terminal, shown in the tool call.
    assert.equal(clientFs.terminals.length, 1);
    assert.equal(clientFs.terminals[0]!.command, "bash");
    assert.deepEqual(clientFs.terminals[0]!.args, ["-c", "make test"]);
    assert.equal(clientFs.terminals[0]!.cwd, workspace);
    assert.match(toolMessages[2]!.content, /output from the editor's terminal/);
    const term = toolUpdates(h.updates(sessionId, from), "call_term") as acp.ToolCallUpdate[];
    assert.ok(term.some((u) => u.content?.some((c) => c.type === "terminal" && c.terminalId === "term_1")));
    assert.equal(term.at(-1)!.status, "completed");
  });
});

describe("switchyard acp with a provider whose models endpoint is on another machine", () => {
  it("starts a session and runs its first prompt without asking that endpoint", async (t) => {
    const remote = await startRemoteModelsEndpoint(["claude-listed-remotely"]);
    if (!remote) return t.skip("this machine has no address besides loopback");
    const fake = await FakeModelServer.start();
    // The catalog lists both providers: the fake model's (on loopback, asked) and Anthropic's.
    const h = AcpHarness.start(fake, { env: { ANTHROPIC_API_KEY: "k", ANTHROPIC_BASE_URL: remote.baseURL } });
    try {
      await h.initialize();
      const { sessionId } = await h.newSession(makeWorkspace({}));
      fake.enqueue({ kind: "response", text: ["hi"], usage: { input: 10, output: 2 } });
      assert.equal((await h.prompt(sessionId, "hello")).stopReason, "end_turn");
      const usage = h.updates(sessionId).find((u) => u.sessionUpdate === "usage_update");
      assert.equal(usage?.sessionUpdate === "usage_update" && usage.size, 128_000, "the context window, from the catalog");
      assert.equal(remote.listings, 0);
    } finally {
      await h.close();
      await fake.close();
      await remote.close();
    }
  });
});
