// Codex's own terminal UI (the pinned @openai/codex, `codex --remote`) driving Switchyard over
// WebSocket, under tmux, with the in-repo fake model: a prompt and its streamed answer, a shell
// command approved from the TUI, leaving, and `codex --remote … resume` showing the history; and a
// thread started on the AppServer face resumed in the TUI.
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { spawnSync } from "node:child_process";
import { after, before, describe, it } from "node:test";
import { FakeModelServer } from "../support/fake-model-server.js";
import { makeWorkspace, modelEnv } from "../support/harness.js";
import { CODEX_CLI, codexMissing } from "../support/codex-schema.js";
import { ServerProcess, tempDir } from "../support/server-process.js";
import { TestClient } from "../support/test-client.js";
import { codexThreadId } from "../../src/faces/codex/wire.js";

const tmuxMissing = spawnSync("sh", ["-c", "command -v tmux"]).status === 0 ? false : "tmux is not installed (npm test installs it)";

/** One TUI in a private tmux server, and what its screen shows. */
class Tui {
  private static count = 0;
  private readonly socket = `switchyard-test-${process.pid}-${Tui.count++}`;

  constructor(url: string, args: string[], home: string, cwd: string) {
    this.tmux(
      "new-session",
      ...["-d", "-s", "tui", "-x", "160", "-y", "50", "-c", cwd, "-e", `HOME=${home}`, "-e", `CODEX_HOME=${path.join(home, ".codex")}`],
      ...[CODEX_CLI, "--remote", url, ...args],
      ";",
      ...["set-option", "-t", "tui", "remain-on-exit", "on"],
    );
  }

  screen(): string {
    return this.tmux("capture-pane", "-p", "-t", "tui");
  }

  /** Waits until the screen shows `pattern` (the TUI has no other signal to wait on). */
  async waitFor(pattern: RegExp, timeoutMs = 30_000): Promise<RegExpMatchArray> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const match = this.screen().match(pattern);
      if (match) return match;
      if (Date.now() > deadline) assert.fail(`the TUI never showed ${pattern}; its screen:\n${this.screen()}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  keys(...keys: string[]): void {
    this.tmux("send-keys", "-t", "tui", ...keys);
  }

  /** Types a prompt and submits it once the composer shows it (typing and Enter at once read as a paste). */
  async submit(prompt: string): Promise<void> {
    this.keys("-l", prompt);
    await this.waitFor(new RegExp(`› ${prompt}`));
    this.keys("C-m");
  }

  close(): void {
    spawnSync("tmux", ["-L", this.socket, "kill-server"]);
  }

  private tmux(...args: string[]): string {
    const result = spawnSync("tmux", ["-L", this.socket, ...args], { encoding: "utf8" });
    if (result.status !== 0) throw new Error(`tmux ${args[0]} failed: ${result.stderr}`);
    return result.stdout;
  }
}

describe("Codex's terminal UI against Switchyard", { skip: codexMissing || tmuxMissing }, () => {
  let fake: FakeModelServer;
  let server: ServerProcess;
  let url: string;
  let home: string;
  let workspace: string;
  const tuis: Tui[] = [];
  const tui = (...args: string[]): Tui => {
    const started = new Tui(url, args, home, workspace);
    tuis.push(started);
    return started;
  };
  before(async () => {
    fake = await FakeModelServer.start();
    server = ServerProcess.spawn({ env: modelEnv(fake), args: ["--listen", "ws://127.0.0.1:0"] });
    url = (await server.websocketUrl()).replace(/\/ws$/, "");
    home = tempDir("codex-tui-home");
    fs.mkdirSync(path.join(home, ".codex"));
    workspace = makeWorkspace({ "README.md": "A project.\n" });
  });
  after(async () => {
    for (const t of tuis) t.close();
    await server?.kill();
    await fake?.close();
  });

  it("streams an answer, runs a command approved in the TUI, and resumes the session", async () => {
    fake.enqueue(
      { kind: "response", text: ["Hello ", "from ", "Switchyard."] },
      { kind: "response", toolCalls: [{ id: "call_tui", name: "bash", arguments: { command: "echo tui-approved" } }] },
      { kind: "response", text: "The command printed tui-approved." },
    );
    const first = tui();
    await first.waitFor(/Ask Codex to do anything/);
    await first.submit("say hello");
    await first.waitFor(/Hello from Switchyard\./);

    await first.submit("run the command");
    await first.waitFor(/Would you like to run the following command\?[\s\S]*echo tui-approved/);
    first.keys("y");
    await first.waitFor(/The command printed tui-approved\./);
    assert.match(first.screen(), /Ran echo tui-approved[\s\S]*└ tui-approved/);

    first.keys("C-c");
    const [, threadId] = await first.waitFor(/resume ([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})/);
    const resumed = tui("resume", threadId!);
    await resumed.waitFor(/Hello from Switchyard\.[\s\S]*The command printed tui-approved\./);
  });

  it("resumes a thread started on the AppServer face", async () => {
    const appServer = await TestClient.overWebSocket(`${url}/ws`);
    try {
      await appServer.initialize();
      fake.enqueue({ kind: "response", text: "Answered on the AppServer face." });
      const { thread } = (await appServer.call("thread/start", { workspacePath: workspace, originChannel: "test" })) as {
        thread: { id: string };
      };
      const done = appServer.waitFor((m) => m.method === "turn/completed", 30_000);
      await appServer.call("turn/start", { threadId: thread.id, input: [{ type: "text", text: "a question from elsewhere" }] });
      await done;
      const resumed = tui("resume", codexThreadId(thread.id));
      await resumed.waitFor(/a question from elsewhere[\s\S]*Answered on the AppServer face\./);
    } finally {
      appServer.close();
    }
  });
});
