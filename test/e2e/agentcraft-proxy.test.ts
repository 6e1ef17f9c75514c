// `agentcraft proxy` driven by an ACP client written with the official SDK, in both modes
// (Direct Bridge and Session Lease): a prompt with its updates streamed, a permission request
// answered by the client, and a cancel; and `agentcraft mcp` driven by the official MCP client.
import assert from "node:assert/strict";
import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import path from "node:path";
import { Readable, Writable } from "node:stream";
import { after, before, describe, it } from "node:test";
import * as acp from "@agentclientprotocol/sdk";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { AGENTCRAFT_CLI, AgentCraftHome, template } from "../support/agentcraft.js";
import { FakeModelServer } from "../support/fake-model-server.js";
import { makeWorkspace, modelEnv } from "../support/harness.js";
import { exitWithin, keepLogBeside } from "../support/server-process.js";

/** An editor: spawns `agentcraft proxy …` and speaks ACP to it. */
class Editor {
  /** Editors still open: a failed test's are killed when the file ends (their proxies would outlive it). */
  static readonly open = new Set<Editor>();
  readonly updates: acp.SessionNotification[] = [];
  readonly permissions: acp.RequestPermissionRequest[] = [];
  /** While set, permission requests are answered only once it resolves (the turn waits there). */
  permissionGate: Promise<void> | undefined;
  readonly agent: acp.ClientContext;
  initialized: acp.InitializeResponse | undefined;
  private readonly child: ChildProcessWithoutNullStreams;
  private readonly connection: acp.ClientConnection;
  stderr = "";

  constructor(home: AgentCraftHome, args: string[]) {
    this.child = spawn(process.execPath, [AGENTCRAFT_CLI, "proxy", ...args], { env: home.processEnv() });
    this.child.stderr.setEncoding("utf8").on("data", (c: string) => (this.stderr += c));
    keepLogBeside(path.join(home.home, `proxy-${this.child.pid}`), this.child.stderr);
    Editor.open.add(this);
    this.child.once("exit", () => Editor.open.delete(this));
    const app = acp
      .client({ name: "test-editor" })
      .onNotification(acp.methods.client.session.update, ({ params }) => void this.updates.push(params))
      .onRequest(acp.methods.client.session.requestPermission, async ({ params }) => {
        this.permissions.push(params);
        await this.permissionGate;
        return { outcome: { outcome: "selected", optionId: "allow_once" } };
      });
    this.connection = app.connect(
      acp.ndJsonStream(
        Writable.toWeb(this.child.stdin) as WritableStream<Uint8Array>,
        Readable.toWeb(this.child.stdout) as ReadableStream<Uint8Array>,
      ),
    );
    this.agent = this.connection.agent;
  }

  async session(cwd: string): Promise<string> {
    this.initialized = await this.agent.request(acp.methods.agent.initialize, {
      protocolVersion: acp.PROTOCOL_VERSION,
      clientCapabilities: {},
    });
    return (await this.agent.request(acp.methods.agent.session.new, { cwd, mcpServers: [] })).sessionId;
  }

  prompt(sessionId: string, text: string): Promise<acp.PromptResponse> {
    return this.agent.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text }] });
  }

  text(sessionId: string): string {
    return this.updates
      .filter((n) => n.sessionId === sessionId && n.update.sessionUpdate === "agent_message_chunk")
      .map((n) => (n.update as { content: { text: string } }).content.text)
      .join("");
  }

  kill(): void {
    this.child.kill("SIGKILL");
  }

  /** Closes the editor's side; resolves with the proxy's exit code. */
  close(): Promise<number | null> {
    const exited = new Promise<number | null>((resolve) => this.child.once("exit", (code) => resolve(code)));
    this.child.stdin.end();
    return exitWithin(this.child, exited, "agentcraft proxy", () => this.stderr);
  }
}

after(() => Editor.open.forEach((editor) => editor.kill()));

/** The scripted turn every mode runs: a shell command that needs permission, then an answer. */
function enqueueToolTurn(fake: FakeModelServer, id: string): void {
  fake.enqueue(
    { kind: "response", text: ["Let me ", "check. "], toolCalls: [{ id, name: "bash", arguments: { command: "echo proxied" } }] },
    { kind: "response", text: ["All ", "done"] },
  );
}

describe("agentcraft proxy", () => {
  let fake: FakeModelServer;
  let home: AgentCraftHome;
  let cwd: string;
  before(async () => {
    fake = await FakeModelServer.start();
    home = new AgentCraftHome(modelEnv(fake));
    home.config("templates", template("helper"));
    await home.startDaemon();
    cwd = makeWorkspace();
  });
  after(async () => {
    await home.stop();
    await fake.close();
  });

  it("Direct Bridge: spawns the agent, attaches it, streams a prompt with a permission, cancels, and detaches", async () => {
    const editor = new Editor(home, ["bridged", "-t", "helper"]);
    const sessionId = await editor.session(cwd);
    assert.equal(home.meta("bridged").processOwnership, "external", "the proxy's agent is attached");

    enqueueToolTurn(fake, "call_bridge");
    assert.equal((await editor.prompt(sessionId, "run it")).stopReason, "end_turn");
    assert.equal(editor.text(sessionId), "Let me check. All done");
    assert.equal(editor.permissions.at(-1)?.toolCall.toolCallId, "call_bridge");
    assert.ok(editor.updates.some((n) => n.update.sessionUpdate === "tool_call_update" && n.update.status === "completed"));

    fake.enqueue({ kind: "response", text: ["never ", "ending"], holdOpen: true });
    const running = editor.prompt(sessionId, "take your time");
    await waitFor(() => editor.text(sessionId).endsWith("never ending"));
    await editor.agent.notify(acp.methods.agent.session.cancel, { sessionId });
    assert.equal((await running).stopReason, "cancelled");

    // A second editor on the same (occupied) agent gets an ephemeral copy.
    const other = new Editor(home, ["bridged"]);
    await other.session(cwd);
    const client = await home.client();
    const copies = (await client.call("agent.list", {})).filter((a) => a.name.startsWith("bridged-"));
    assert.equal(copies.length, 1);
    assert.equal(copies[0]!.workspacePolicy, "ephemeral");
    await other.close();
    assert.ok(!(await client.call("agent.list", {})).some((a) => a.name === copies[0]!.name), "the copy is destroyed");

    assert.equal(await editor.close(), 0);
    assert.equal((await client.call("agent.status", { name: "bridged" })).status, "stopped", "detached on disconnect");
    client.close();
  });

  it("Session Lease: the daemon's agent serves a leased session, updates streamed as they happen", async () => {
    assert.equal((await home.cli("agent", "create", "leased", "-t", "helper")).code, 0);
    assert.equal((await home.cli("agent", "start", "leased")).code, 0);
    const editor = new Editor(home, ["leased", "--lease"]);
    const sessionId = await editor.session(cwd);
    // initialize was answered with the running agent's own capabilities (switchyard acp's).
    assert.equal(
      home.meta("leased").agentCapabilities && (home.meta("leased").agentCapabilities as { loadSession: boolean }).loadSession,
      true,
    );
    assert.deepEqual(editor.initialized?.agentCapabilities?.mcpCapabilities, { http: false, sse: false });
    assert.equal(editor.initialized?.agentCapabilities?.loadSession, false);
    const client = await home.client();
    const [lease] = await client.call("session.list", { agentName: "leased" });
    assert.equal(lease?.sessionId, sessionId);
    assert.equal(lease?.state, "active");

    enqueueToolTurn(fake, "call_lease");
    let allow!: () => void;
    editor.permissionGate = new Promise((resolve) => (allow = resolve));
    const prompted = editor.prompt(sessionId, "run it");
    // Streamed: the first words arrive while the turn still waits for the permission.
    await waitFor(() => editor.permissions.length > 0);
    assert.equal(editor.text(sessionId), "Let me check. ");
    allow();
    assert.equal((await prompted).stopReason, "end_turn");
    assert.equal(editor.text(sessionId), "Let me check. All done");

    fake.enqueue({ kind: "response", text: ["never ", "ending"], holdOpen: true });
    const running = editor.prompt(sessionId, "take your time");
    await waitFor(() => editor.text(sessionId).endsWith("never ending"));
    await editor.agent.notify(acp.methods.agent.session.cancel, { sessionId });
    assert.equal((await running).stopReason, "cancelled");

    assert.equal(await editor.close(), 0);
    await waitFor(async () => (await client.call("session.list", { agentName: "leased" }))[0]?.state === "idle");
    assert.equal((await client.call("agent.status", { name: "leased" })).status, "running", "the agent keeps running");

    // The editor comes back: its idle session resumes, with the conversation so far.
    const back = new Editor(home, ["leased", "--lease"]);
    assert.equal(await back.session(cwd), sessionId);
    assert.equal((await client.call("session.list", { agentName: "leased" }))[0]?.state, "active");
    fake.enqueue({ kind: "response", text: "still here" });
    assert.equal((await back.prompt(sessionId, "remember?")).stopReason, "end_turn");
    assert.match(JSON.stringify(fake.requests.at(-1)!.body.messages), /All done/);
    assert.equal(await back.close(), 0);
    client.close();
  });
});

describe("agentcraft mcp", () => {
  it("lists the five tools and calls each one", async () => {
    const fake = await FakeModelServer.start();
    const home = new AgentCraftHome(modelEnv(fake));
    home.config("templates", template("worker"));
    await home.startDaemon();
    const client = new Client({ name: "test-agent", version: "0" });
    await client.connect(
      new StdioClientTransport({
        command: process.execPath,
        args: [AGENTCRAFT_CLI, "mcp"],
        env: home.processEnv() as Record<string, string>,
      }),
    );
    try {
      const tools = (await client.listTools()).tools.map((t) => t.name).sort();
      assert.deepEqual(tools, [
        "agentcraft_agent_status",
        "agentcraft_create_agent",
        "agentcraft_list_agents",
        "agentcraft_prompt_agent",
        "agentcraft_run_agent",
      ]);
      const json = async (name: string, args: Record<string, unknown>): Promise<{ value: unknown; isError: boolean }> => {
        const result = (await client.callTool({ name, arguments: args })) as { content: Array<{ text: string }>; isError?: boolean };
        const text = result.content[0]!.text;
        return { value: result.isError ? text : JSON.parse(text), isError: result.isError === true };
      };
      const created = await json("agentcraft_create_agent", { name: "w1", template: "worker" });
      assert.deepEqual(created.value, { name: "w1", workspaceDir: `${home.home}/instances/w1`, status: "created" });
      assert.equal(((await json("agentcraft_agent_status", { name: "w1" })).value as { status: string }).status, "created");
      assert.deepEqual(
        ((await json("agentcraft_list_agents", {})).value as Array<{ name: string }>).map((a) => a.name),
        ["w1"],
      );
      const notStarted = await json("agentcraft_prompt_agent", { name: "w1", message: "hi" });
      assert.equal(notStarted.isError, true);
      assert.match(String(notStarted.value), /AGENT_NOT_ATTACHED \(-32010\)/);
      assert.equal((await home.cli("agent", "start", "w1")).code, 0);
      fake.enqueue({ kind: "response", text: "hello from w1" });
      const prompted = (await json("agentcraft_prompt_agent", { name: "w1", message: "hi" })).value as {
        response: string;
        sessionId: string;
      };
      assert.equal(prompted.response, "hello from w1");
      fake.enqueue({ kind: "response", text: "ran once" });
      assert.deepEqual((await json("agentcraft_run_agent", { template: "worker", prompt: "do it" })).value, {
        response: "ran once",
        artifacts: [],
      });
      const missing = await json("agentcraft_run_agent", { template: "nope", prompt: "x" });
      assert.match(String(missing.value), /TEMPLATE_NOT_FOUND/);
    } finally {
      await client.close();
      await home.stop();
      await fake.close();
    }
  });
});

async function waitFor(check: () => boolean | Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error("timed out");
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}
