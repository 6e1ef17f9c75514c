// One suite, every backend: the same scenarios (streamed text, a shell command approved, one
// declined, an interrupt) run through the AppServer face against each backend's scripted agent,
// and must look the same to the client. A backend's own tests cover what only it does.
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { after, before, describe, it } from "node:test";
import type { ApprovalDecision } from "../../src/client/index.js";
import type { BackendSpec } from "../../src/domain/model.js";
import type { FakeAcpScript } from "../support/fake-acp-agent.js";
import type { FakeCodexScript } from "../support/fake-codex-app-server.js";
import type { FakeScript } from "../support/fake-claude-cli.js";
import { tempDir } from "../support/server-process.js";
import { itemsOf, startTypedHarness, type TypedHarness } from "../support/typed-harness.js";

const FAKE_CLAUDE = fileURLToPath(new URL("../support/fake-claude-cli.js", import.meta.url));
const FAKE_CODEX = fileURLToPath(new URL("../support/fake-codex-app-server.js", import.meta.url));
const FAKE_ACP = fileURLToPath(new URL("../support/fake-acp-agent.js", import.meta.url));

/** What every backend is asked to do. `marker` is what the command prints. */
type Scenario = { kind: "text"; text: string[] } | { kind: "shell"; command: string; marker: string; after: string } | { kind: "hang" };

/** Scripts one scenario for one backend and names the thread's backend (undefined: built-in). */
interface Driver {
  name: string;
  script(h: TypedHarness, scenario: Scenario, prompt: string): BackendSpec | undefined;
}

const builtin: Driver = {
  name: "builtin",
  script(h, s) {
    if (s.kind === "text") h.model.enqueue({ kind: "response", text: s.text });
    if (s.kind === "shell") {
      h.model.enqueue(
        { kind: "response", toolCalls: [{ id: "call_sh", name: "bash", arguments: { command: s.command } }] },
        { kind: "response", text: [s.after] },
      );
    }
    if (s.kind === "hang") h.model.enqueue({ kind: "response", text: ["thinking..."], holdOpen: true });
    return undefined;
  },
};

const claudeCode: Driver = {
  name: "claude-code",
  script(_h, s) {
    const steps: FakeScript["turns"][number]["steps"] =
      s.kind === "text"
        ? [{ text: s.text }]
        : s.kind === "shell"
          ? [{ tool: { id: "toolu_sh", name: "Bash", input: { command: s.command }, ask: true } }, { text: s.after }]
          : [{ hang: {} }];
    const dir = tempDir("shared-claude");
    fs.writeFileSync(path.join(dir, "script.json"), JSON.stringify({ turns: [{ steps }] } satisfies FakeScript));
    return { type: "claude-code", command: process.execPath, args: [FAKE_CLAUDE], env: { FAKE_CLAUDE_DIR: dir } };
  },
};

const codex: Driver = {
  name: "codex",
  script(_h, s, prompt) {
    // The fake does not run commands; it reports the scripted output only when accepted.
    const steps: FakeCodexScript["turns"][string] =
      s.kind === "text"
        ? [{ message: s.text }]
        : s.kind === "shell"
          ? [{ command: s.command, output: `${s.marker}\n`, approval: true }, { message: [s.after] }]
          : [{ waitForInterrupt: true }];
    const dir = tempDir("shared-codex");
    const scriptFile = path.join(dir, "script.json");
    fs.writeFileSync(scriptFile, JSON.stringify({ turns: { [prompt]: steps } } satisfies FakeCodexScript));
    return { type: "codex", command: process.execPath, args: [FAKE_CODEX], env: { FAKE_CODEX_SCRIPT: scriptFile } };
  },
};

const acpAgent: Driver = {
  name: "acp",
  script(_h, s, prompt) {
    // The command runs for real, in a terminal the backend serves to the agent.
    const steps: FakeAcpScript["turns"][string] =
      s.kind === "text"
        ? [{ message: s.text }]
        : s.kind === "shell"
          ? [{ command: s.command, permission: true, terminal: true }, { message: [s.after] }]
          : [{ waitForCancel: true }];
    const scriptFile = path.join(tempDir("shared-acp"), "script.json");
    fs.writeFileSync(scriptFile, JSON.stringify({ turns: { [prompt]: steps } } satisfies FakeAcpScript));
    return { type: "acp", command: process.execPath, args: [FAKE_ACP], env: { FAKE_ACP_SCRIPT: scriptFile } };
  },
};

const DRIVERS: Driver[] = [builtin, claudeCode, codex, acpAgent];

for (const driver of DRIVERS) {
  describe(`every backend: ${driver.name}`, () => {
    let h: TypedHarness;
    let decision: ApprovalDecision = "accept";
    before(async () => {
      h = await startTypedHarness({ capabilities: { commandExecutionStreaming: true }, onApproval: () => decision });
    });
    after(() => h.close());

    async function thread(scenario: Scenario, prompt: string): Promise<string> {
      const backend = driver.script(h, scenario, prompt);
      return h.startThread(backend ? { configuration: { backend } } : {});
    }

    it("streams text in deltas and completes the message", async () => {
      const threadId = await thread({ kind: "text", text: ["Hello ", "from ", "the suite"] }, "say hello");
      const end = await h.runTurn(threadId, "say hello");
      assert.equal(end.method, "turn/completed");
      const deltas = h.notifications("item/agentMessage/delta", threadId);
      assert.ok(deltas.length >= 2, "streamed, not sent whole");
      assert.equal(deltas.map((d) => d.delta).join(""), "Hello from the suite");
      assert.deepEqual(
        itemsOf(h.completedItems(threadId), "agentMessage").map((i) => i.payload.text),
        ["Hello from the suite"],
      );
    });

    it("asks before a shell command and, accepted, shows its output", async () => {
      decision = "accept";
      const command = "echo suite-accepted";
      const threadId = await thread({ kind: "shell", command, marker: "suite-accepted", after: "ran it" }, "run accepted");
      assert.equal((await h.runTurn(threadId, "run accepted")).method, "turn/completed");
      const request = h.approvals.find((r) => r.threadId === threadId);
      assert.equal(request?.approvalType, "shell");
      assert.match(request?.operation ?? "", /echo suite-accepted/);
      const ran = itemsOf(h.completedItems(threadId), "commandExecution");
      assert.ok(
        ran.some((i) => String(i.payload.output).includes("suite-accepted")),
        "a commandExecution item carries the output",
      );
      assert.ok(itemsOf(h.completedItems(threadId), "agentMessage").some((i) => i.payload.text === "ran it"));
    });

    it("declined, the command does not run and the turn goes on", async () => {
      decision = "decline";
      const command = "echo suite-declined";
      const threadId = await thread({ kind: "shell", command, marker: "suite-declined", after: "not running it" }, "run declined");
      assert.equal((await h.runTurn(threadId, "run declined")).method, "turn/completed");
      assert.equal(h.approvals.filter((r) => r.threadId === threadId).length, 1);
      const outputs = itemsOf(h.completedItems(threadId), "commandExecution").map((i) => String(i.payload.output));
      assert.ok(!outputs.some((o) => o.includes("suite-declined")), `no output of a declined command: ${JSON.stringify(outputs)}`);
      assert.ok(itemsOf(h.completedItems(threadId), "agentMessage").some((i) => i.payload.text === "not running it"));
    });

    it("an interrupt cancels a running turn", async () => {
      const threadId = await thread({ kind: "hang" }, "wait");
      const turnId = await h.startTurn(threadId, "wait");
      await h.notification("turn/started", (p) => p.threadId === threadId);
      const interrupted = await h.client.interrupt(threadId, turnId);
      assert.equal(interrupted.turn.id, turnId);
      const end = await h.notification("turn/cancelled", (p) => p.threadId === threadId);
      assert.equal(end.turn.id, turnId);
    });
  });
}
