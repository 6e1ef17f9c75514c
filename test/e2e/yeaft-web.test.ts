// The Yeaft web client in a real browser (headless Chromium from the system's packages, driven
// by Playwright) against a real relay, a real agent process and the fake model server: login,
// a streamed chat rendered as safe markdown, an approval answered from the ask-user dialog,
// cancel, an attachment, a group chat with @mention completion and a lane per persona, an agent
// restart with the conversation going on, catch-up after a reload and after a relay restart
// mid-turn, and the phone-width layout.
// Screenshots of the main screens go to YEAFT_SCREENSHOTS (docs/images when refreshing them).
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { chromium, type Browser, type Page } from "playwright-core";
import { FakeModelServer } from "../support/fake-model-server.js";
import { makeWorkspace, modelEnv } from "../support/harness.js";
import { freePort, ServerProcess, tempDir } from "../support/server-process.js";
import { addUser } from "../support/yeaft.js";

const chromiumPath = ["chromium", "chromium-browser"]
  .map((name) => spawnSync("sh", ["-c", `command -v ${name}`], { encoding: "utf8" }).stdout.trim())
  .find((found) => found && existsSync(found));
const screenshots = process.env.YEAFT_SCREENSHOTS ?? tempDir("yeaft-shots");

describe("yeaft web client", { skip: chromiumPath ? false : "no chromium on PATH (scripts/test-prerequisites.mjs installs it)" }, () => {
  let fake: FakeModelServer;
  let relay: ServerProcess;
  let agent: ServerProcess;
  let browser: Browser;
  let page: Page;
  let base: string;
  const dataDir = tempDir("yeaft-web");
  const agentDataDir = tempDir("yeaft-web-agent");
  const workspace = makeWorkspace();
  let agentArgs: string[];
  let startRelay: () => ServerProcess;

  const startAgent = async (): Promise<ServerProcess> => {
    const started = ServerProcess.spawn({
      command: ["yeaft", "agent"],
      args: agentArgs,
      dataDir: agentDataDir,
      cwd: workspace,
      env: modelEnv(fake),
    });
    await started.waitForLog((l) => l.msg === "registered with the yeaft relay");
    return started;
  };
  const shot = (name: string): Promise<Buffer> => page.screenshot({ path: path.join(screenshots, `${name}.png`) });
  const composer = () => page.getByRole("textbox", { name: "Message" });
  /** Where the sidebar is once its slide (a CSS transition) has finished. */
  const sidebarSettled = () =>
    page.locator(".sidebar").evaluate(async (el) => {
      await Promise.all(el.getAnimations().map((animation: { finished: Promise<unknown> }) => animation.finished));
      const { left, right } = el.getBoundingClientRect();
      return { left, right };
    });

  before(async () => {
    mkdirSync(screenshots, { recursive: true });
    fake = await FakeModelServer.start();
    const secret = await addUser(dataDir, "alice", "alice-password");
    const port = await freePort();
    startRelay = () => ServerProcess.spawn({ command: ["yeaft", "relay"], args: ["--port", String(port)], dataDir });
    relay = startRelay();
    await relay.waitForLog((l) => l.msg === "yeaft relay listening");
    base = `http://127.0.0.1:${port}`;
    const personas = path.join(dataDir, "personas.json");
    writeFileSync(
      personas,
      JSON.stringify([
        { name: "ada", description: "careful reviewer", systemPrompt: "You are Ada, a careful reviewer." },
        { name: "linus", description: "terse", systemPrompt: "You are Linus, terse." },
      ]),
    );
    agentArgs = ["--server", `ws://127.0.0.1:${port}/`, "--secret", secret, "--name", "laptop", "--personas", personas];
    agent = await startAgent();
    browser = await chromium.launch({ executablePath: chromiumPath!, headless: true, args: ["--no-sandbox"] });
    page = await browser.newPage({ viewport: { width: 1200, height: 800 } });
  });
  after(async () => {
    await browser?.close();
    await agent?.kill();
    await relay?.kill();
    await fake?.close();
  });

  it("logs in, refusing a wrong password, and lists the user's agent online", async () => {
    await page.goto(base);
    await page.getByLabel("Username").fill("alice");
    await page.getByLabel("Password").fill("not-her-password");
    await page.getByRole("button", { name: "Log in" }).click();
    await page.getByRole("alert").getByText("Wrong username or password.").waitFor();
    await shot("login");
    await page.getByLabel("Password").fill("alice-password");
    await page.getByRole("button", { name: "Log in" }).click();
    await page.locator(".agent", { hasText: "laptop" }).locator(".dot.online").waitFor();
  });

  it("streams a reply as it comes, rendered as sanitized markdown with highlighted code, thinking collapsed", async () => {
    await page.getByRole("button", { name: "New chat" }).click();
    fake.enqueue({
      kind: "response",
      reasoning: ["Let me think."],
      text: [
        "Here is **the** plan.\n\n",
        '<img src="x" onerror="window.__pwned = 1"><script>window.__pwned = 2</script>\n\n',
        "```js\nconst answer = 42;\n```\n",
      ],
      usage: { input: 120, output: 30 },
      chunkDelayMs: 400,
    });
    await composer().fill("How do we start?");
    await composer().press("Enter");
    // Streaming: the first words show while the turn still runs.
    await page.locator(".msg.assistant strong", { hasText: "the" }).waitFor();
    assert.equal(await page.locator(".result").count(), 0, "the first delta shows before the turn ends");
    await page.locator(".result", { hasText: "Done in" }).waitFor();
    assert.match(await page.locator(".result").innerText(), /120 in \/ 30 out tokens/);
    await page.locator("code.hljs.language-js .hljs-keyword", { hasText: "const" }).waitFor();
    assert.equal(await page.locator(".markdown [onerror], .markdown script").count(), 0);
    assert.equal(await page.evaluate("window.__pwned"), undefined);
    const thinking = page.locator("details.thinking");
    assert.equal(await thinking.getAttribute("open"), null, "thinking is collapsed");
    assert.equal(await thinking.locator("pre").textContent(), "Let me think.");
    await shot("chat");
  });

  it("asks before a shell command in a dialog, and runs it when allowed, the tool call shown with its result", async () => {
    fake.enqueue(
      { kind: "response", toolCalls: [{ id: "call_1", name: "bash", arguments: { command: "echo from-the-browser > asked.txt" } }] },
      { kind: "response", text: "Written." },
    );
    await composer().fill("Write the file, please.");
    await composer().press("Enter");
    const dialog = page.getByRole("dialog", { name: "The agent asks" });
    await dialog.getByText("echo from-the-browser > asked.txt").waitFor();
    await shot("ask-user");
    await dialog.getByRole("button", { name: "Allow" }).click();
    await page.getByText("Written.").waitFor();
    assert.equal(await dialog.count(), 0);
    assert.equal(readFileSync(path.join(workspace, "asked.txt"), "utf8"), "from-the-browser\n");
    const tool = page.locator("details.tool").last();
    assert.match(await tool.locator(".tool-status").innerText(), /done/);
  });

  it("cancels a running turn, and sends an attached text file with the message", async () => {
    fake.enqueue({ kind: "response", text: ["Thinking out loud"], holdOpen: true });
    await composer().fill("Take your time.");
    await composer().press("Enter");
    await page.getByText("Thinking out loud").waitFor();
    await page.getByRole("button", { name: "Cancel" }).click();
    await page.locator(".result", { hasText: "Cancelled" }).waitFor();

    fake.enqueue({ kind: "response", text: "Read it." });
    await page
      .getByLabel("Attach files")
      .setInputFiles({ name: "notes.txt", mimeType: "text/plain", buffer: Buffer.from("remember the milk") });
    await page.locator(".chip", { hasText: "notes.txt" }).waitFor();
    await composer().fill("See the notes.");
    await composer().press("Enter");
    await page.getByText("Read it.").waitFor();
    const sent = JSON.stringify(fake.requests.at(-1)!.body);
    assert.ok(sent.includes("Attached file notes.txt") && sent.includes("remember the milk"), sent);
    await page.locator(".msg.user .files", { hasText: "notes.txt" }).waitFor();
  });

  it("goes on with the conversation after the agent restarts, and catches up after a reload", async () => {
    await agent.kill();
    await page.locator(".badge.offline").waitFor();
    agent = await startAgent();
    await page.locator(".badge.online").waitFor();
    fake.enqueue({ kind: "response", text: "Still here, same conversation." });
    await composer().fill("Are you back?");
    await composer().press("Enter");
    await page.getByText("Still here, same conversation.").waitFor();
    // The model saw the earlier turns: the thread survived the agent's restart.
    assert.ok(JSON.stringify(fake.requests.at(-1)!.body).includes("How do we start?"));

    const before = { results: await page.locator(".result").allInnerTexts(), users: await page.locator(".msg.user").allInnerTexts() };
    await page.reload();
    await page.locator(".conversation", { hasText: "How do we start?" }).click();
    await page.getByText("Still here, same conversation.").waitFor();
    await page.getByText("Written.").waitFor();
    // The same conversation as before the reload: every message, attachment names and turn results.
    assert.deepEqual(await page.locator(".msg.user").allInnerTexts(), before.users);
    assert.equal((await page.locator(".result").allInnerTexts()).length, before.results.length);
    assert.match((await page.locator(".result").allInnerTexts()).join("\n"), /Cancelled/);
  });

  it("reconnects after a relay restart mid-turn, and the reply arrives whole and once", async () => {
    await page.locator(".conversation", { hasText: "How do we start?" }).click();
    fake.enqueue({ kind: "response", text: ["one ", "two ", "three ", "four ", "five ", "six"], chunkDelayMs: 250 });
    await composer().fill("Count to six.");
    await composer().press("Enter");
    await page.getByText("one two").waitFor();
    await relay.kill();
    await page.getByText("Connection lost: reconnecting…").waitFor();
    relay = startRelay();
    await relay.waitForLog((l) => l.msg === "yeaft relay listening");
    await page.locator(".result").last().waitFor();
    await page.getByText("one two three four five six").waitFor();
    assert.equal(await page.getByText("Connection lost").count(), 0);
    const replies = await page.locator(".msg.assistant").allInnerTexts();
    assert.equal(replies.filter((t) => t.includes("one two")).length, 1, "one reply");
    assert.ok(replies.includes("one two three four five six"), `whole, no delta twice: ${JSON.stringify(replies.slice(-2))}`);
  });

  it("in a second browser, shows the history and a live reply that came before the history's answer", async () => {
    // The second browser's own catch-up answer is held back until a live output of a turn started
    // in the first has reached it, after another browser's answer from just before that output
    // (the relay sends each answer to every browser of the owner): the order a reconnect can give.
    const context = await browser.newContext({ storageState: await page.context().storageState() });
    let held: string[] | undefined = [];
    let answerHeld!: () => void;
    const holding = new Promise<void>((resolve) => (answerHeld = resolve));
    await context.routeWebSocket(/type=web/, (ws) => {
      const server = ws.connectToServer();
      server.onMessage((message) => {
        const msg = JSON.parse(String(message)) as { type: string; conversationId: string; seq: number; data: unknown };
        if (held && msg.type === "sync_messages_result") {
          held.push(String(message));
          return answerHeld();
        }
        if (held?.length && msg.type === "claude_output") {
          const { conversationId, seq, data } = msg;
          ws.send(
            JSON.stringify({ type: "sync_messages_result", conversationId, afterSeq: seq - 1, messages: [{ seq, data }], lastSeq: seq }),
          );
          ws.send(message);
          for (const answer of held) ws.send(answer);
          held = undefined;
          return;
        }
        ws.send(message);
      });
    });
    const second = await context.newPage();
    await second.goto(base);
    await second.locator(".conversation", { hasText: "How do we start?" }).click();
    await holding;
    fake.enqueue({ kind: "response", text: "Seen in both browsers." });
    await composer().fill("Do both of you see this?");
    await composer().press("Enter");
    await second.getByText("Seen in both browsers.").waitFor();
    assert.equal(held, undefined, "the live output came before the history");
    await second.getByText("Still here, same conversation.").waitFor({ timeout: 5_000 });
    assert.equal(await second.locator(".msg.user", { hasText: "How do we start?" }).count(), 1);
    assert.equal(await second.getByText("Seen in both browsers.").count(), 1, "once");
    await context.close();
  });

  it("runs a group chat: @mention completion, and a lane per persona answering in parallel", async () => {
    await page.getByRole("button", { name: /New group chat/ }).click();
    await composer().pressSequentially("@");
    const options = page.getByRole("listbox", { name: "Personas" }).getByRole("option");
    assert.deepEqual(await options.allInnerTexts(), ["@ada careful reviewer", "@linus terse"]);
    await composer().pressSequentially("l");
    assert.deepEqual(await options.allInnerTexts(), ["@linus terse"]);
    await composer().press("Enter");
    assert.equal(await composer().inputValue(), "@linus ");
    await composer().pressSequentially("and @a");
    await composer().press("Tab");
    await composer().pressSequentially("what do you think?");
    fake.enqueue({ kind: "response", text: "One view.", chunkDelayMs: 50 }, { kind: "response", text: "Another view.", chunkDelayMs: 50 });
    await composer().press("Enter");
    await page.locator(".lane .result").nth(1).waitFor();
    const lanes = page.locator(".lane");
    assert.deepEqual(await lanes.evaluateAll((els) => els.map((el) => el.getAttribute("data-persona")).sort()), ["ada", "linus"]);
    const answers = await page.locator(".lane .markdown").allInnerTexts();
    assert.deepEqual(answers.map((t) => t.trim()).sort(), ["Another view.", "One view."]);
    const systems = fake.requests.slice(-2).map((r) => JSON.stringify(r.body.messages[0]));
    assert.ok(systems.some((s) => s.includes("You are Ada")) && systems.some((s) => s.includes("You are Linus")));
    await shot("group-chat");
  });

  it("fits a phone-width screen: the sidebar slides over the conversation", async () => {
    await page.setViewportSize({ width: 390, height: 800 });
    assert.ok((await sidebarSettled()).right <= 0, "the sidebar is off screen");
    await page.getByRole("button", { name: "Menu" }).click();
    assert.equal((await sidebarSettled()).left, 0, "the menu slides it in");
    await shot("phone-sidebar");
    await page.locator(".conversation").first().click();
    assert.ok((await sidebarSettled()).right <= 0, "choosing a conversation closes it");
    await shot("phone-chat");
  });
});
