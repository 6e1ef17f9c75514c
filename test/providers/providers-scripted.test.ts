// The scripted provider: replaying a script file, its validation, and the shipped demo script.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { createProvider, isProviderConfigProblem } from "../../src/providers/select.js";
import { END_OF_SCRIPT, loadScript } from "../../src/providers/scripted.js";
import { ProviderError, type ModelProvider, type ModelRequest, type ModelStreamEvent } from "../../src/providers/provider.js";
import { bashTool } from "../../src/tools/bash.js";
import { listFilesTool } from "../../src/tools/list-files.js";

const DEMO = fileURLToPath(new URL("../../../examples/scripted-demo.json", import.meta.url));
const dir = fs.mkdtempSync(path.join(os.tmpdir(), "switchyard-scripted-"));
let counter = 0;

/** Writes a script to a fresh file (positions are kept per file) and returns its path. */
function scriptFile(content: unknown): string {
  const file = path.join(dir, `script-${++counter}.json`);
  fs.writeFileSync(file, typeof content === "string" ? content : JSON.stringify(content));
  return file;
}

async function scriptedProvider(file: string, retry = { maxAttempts: 1 }): Promise<ModelProvider> {
  const provider = await createProvider({ provider: "scripted", model: file, env: {}, retry });
  assert.ok(!isProviderConfigProblem(provider), isProviderConfigProblem(provider) ? provider.problem : "");
  return provider;
}

async function problemOf(file: string): Promise<string> {
  const result = await createProvider({ provider: "scripted", model: file, env: {} });
  assert.ok(isProviderConfigProblem(result), "expected a configuration problem");
  return result.problem;
}

const request = (model = ""): ModelRequest => ({ model, system: "", messages: [{ role: "user", content: "hi" }], tools: [] });

async function run(
  provider: ModelProvider,
  signal = new AbortController().signal,
): Promise<{ events: ModelStreamEvent[]; error?: unknown }> {
  const events: ModelStreamEvent[] = [];
  try {
    for await (const event of provider.stream(request(provider.defaultModel), signal)) events.push(event);
    return { events };
  } catch (error) {
    return { events, error };
  }
}

const texts = (events: ModelStreamEvent[], type: "textDelta" | "reasoningDelta"): string[] =>
  events.flatMap((e) => (e.type === type ? [e.delta] : []));

describe("scripted provider", () => {
  test("replays reasoning, text and tool calls, one response per call", async () => {
    const file = scriptFile({
      responses: [
        {
          reasoning: "Thinking it over.",
          text: ["Let me ", "look."],
          toolCalls: [{ id: "c1", name: "list_files", arguments: { path: "." } }],
          delayMs: 0,
        },
        { text: "All done.", usage: { input: 10, output: 3 }, delayMs: 0 },
      ],
    });
    const provider = await scriptedProvider(file);
    assert.equal(provider.name, "scripted");
    assert.equal(provider.defaultModel, file);

    const first = await run(provider);
    assert.equal(first.error, undefined);
    assert.deepEqual(texts(first.events, "reasoningDelta"), ["Thinking ", "it ", "over."]);
    assert.deepEqual(texts(first.events, "textDelta"), ["Let me ", "look."]);
    assert.deepEqual(
      first.events.filter((e) => e.type.startsWith("toolCall")),
      [
        { type: "toolCallStart", index: 0, id: "c1", name: "list_files" },
        { type: "toolCallDelta", index: 0, argumentsDelta: '{"path":"."}' },
      ],
    );
    assert.equal(first.events.at(-2)?.type, "usage");
    assert.deepEqual(first.events.at(-1), { type: "stop", reason: "toolCalls" });

    const second = await run(provider);
    assert.deepEqual(texts(second.events, "textDelta"), ["All ", "done."]);
    assert.deepEqual(second.events.slice(-2), [
      { type: "usage", usage: { inputTokens: 10, outputTokens: 3 } },
      { type: "stop", reason: "end" },
    ]);
  });

  test("new provider instances continue the script, and the end of it says so", async () => {
    const file = scriptFile({
      responses: [
        { text: "one", delayMs: 0 },
        { text: "two", delayMs: 0 },
      ],
    });
    const said = [];
    for (let turn = 0; turn < 4; turn++) said.push(texts((await run(await scriptedProvider(file))).events, "textDelta").join(""));
    assert.deepEqual(said, ["one", "two", END_OF_SCRIPT, END_OF_SCRIPT]);
  });

  test("a looping script starts over", async () => {
    const file = scriptFile({
      responses: [
        { text: "a", delayMs: 0 },
        { text: "b", delayMs: 0 },
      ],
      loop: true,
    });
    const said = [];
    for (let turn = 0; turn < 5; turn++) said.push(texts((await run(await scriptedProvider(file))).events, "textDelta").join(""));
    assert.deepEqual(said, ["a", "b", "a", "b", "a"]);
  });

  test("streams chunks with the delay between them, and an abort ends it promptly", async () => {
    const file = scriptFile({
      responses: [
        { text: ["a", "b", "c"], delayMs: 40 },
        { text: ["x", "y", "z"], delayMs: 5000 },
      ],
    });
    const started = Date.now();
    const { events } = await run(await scriptedProvider(file));
    assert.deepEqual(texts(events, "textDelta"), ["a", "b", "c"]);
    assert.ok(Date.now() - started >= 75, "two pauses of 40 ms");

    const controller = new AbortController();
    const seen: ModelStreamEvent[] = [];
    let abortedAt = 0;
    for await (const event of (await scriptedProvider(file)).stream(request(file), controller.signal)) {
      seen.push(event);
      abortedAt = Date.now();
      controller.abort();
    }
    assert.ok(Date.now() - abortedAt < 500, "the abort should not wait out the 5 s delay");
    assert.deepEqual(texts(seen, "textDelta"), ["x"]);
  });

  test("scripted errors fail like the API would; the next call takes the next response", async () => {
    const file = scriptFile({
      responses: [
        { error: { status: 429, message: "Slow down.", retryAfterSeconds: 0.01 } },
        { text: "after the wait", delayMs: 0 },
        { text: ["half"], error: { status: 500 }, delayMs: 0 },
      ],
    });
    const once = await run(await scriptedProvider(file));
    assert.ok(once.error instanceof ProviderError);
    assert.equal(once.error.code, "rateLimited");
    assert.equal(once.error.retryAfterMs, 10);
    assert.match(once.error.message, /scripted model.*Slow down/);

    const next = await run(await scriptedProvider(file));
    assert.equal(texts(next.events, "textDelta").join(""), "after the wait");

    const midway = await run(await scriptedProvider(file, { maxAttempts: 3 }));
    assert.deepEqual(texts(midway.events, "textDelta"), ["half"]);
    assert.ok(midway.error instanceof ProviderError);
    assert.equal(midway.error.beforeOutput, false);
    assert.equal(midway.error.httpStatus, 500);
  });

  test("with retries, a scripted 429 is waited out and the next response answers", async () => {
    const file = scriptFile({ responses: [{ error: { status: 429, retryAfterSeconds: 0.01 } }, { text: "second", delayMs: 0 }] });
    const { events, error } = await run(await scriptedProvider(file, { maxAttempts: 2 }));
    assert.equal(error, undefined);
    assert.equal(texts(events, "textDelta").join(""), "second");
  });

  test("bad scripts are refused with the file and the JSON path of the problem", async () => {
    const missing = path.join(dir, "nope.json");
    assert.match(await problemOf(missing), new RegExp(`^Script ${escape(missing)} cannot be read: ENOENT`));
    const notJson = scriptFile("{ responses: [");
    assert.match(await problemOf(notJson), new RegExp(`^Script ${escape(notJson)} is not valid JSON: `));

    const bad = scriptFile({
      responses: [{ text: "ok" }, { toolCalls: [{ arguments: {} }], txt: "typo" }, { delayMs: -1 }],
      loops: true,
    });
    const problem = await problemOf(bad);
    assert.match(problem, new RegExp(`^Script ${escape(bad)} is invalid: `));
    assert.match(problem, /responses\[1\]\.toolCalls\[0\]\.name: /);
    assert.match(problem, /responses\[1\]\.txt: unknown field/);
    assert.match(problem, /responses\[2\]\.delayMs: /);
    assert.match(problem, /(^|; )loops: unknown field/);

    assert.match(await problemOf(scriptFile([])), /is invalid: \(top level\): /);
    const none = await createProvider({ provider: "scripted", env: {} });
    assert.ok(isProviderConfigProblem(none) && /--model \.\/path\/to\/script\.json/.test(none.problem));
  });

  test("SWITCHYARD_SCRIPT names the script when no model does", async () => {
    const file = scriptFile({ responses: [{ text: "from env", delayMs: 0 }] });
    const provider = await createProvider({ provider: "scripted", env: { SWITCHYARD_SCRIPT: file } });
    assert.ok(!isProviderConfigProblem(provider));
    assert.equal(provider.defaultModel, file);
    assert.equal(texts((await run(provider)).events, "textDelta").join(""), "from env");
  });

  test("the demo script is valid and calls the real tools with valid arguments", () => {
    const script = loadScript(DEMO);
    const calls = script.responses.flatMap((r) => r.toolCalls ?? []);
    assert.deepEqual(
      calls.map((c) => c.name),
      ["list_files", "bash"],
    );
    assert.ok(listFilesTool.input.safeParse(calls[0]!.arguments).success);
    const bash = bashTool.input.safeParse(calls[1]!.arguments);
    assert.ok(bash.success);
    assert.equal((bash.data as { command: string }).command, 'echo "hello from the scripted model" > hello.txt');
    assert.ok(script.responses[0]!.reasoning, "the first response reasons");
    assert.ok(!script.responses.at(-1)!.toolCalls, "the last response only summarizes");
  });
});

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}
