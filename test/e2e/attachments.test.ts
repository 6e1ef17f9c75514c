// Images and file references reach the model: image parts in all three APIs (also from history
// rebuilt after a restart), fileRef as the file's contents, size caps and refusals, and which
// models take images (model/list).
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { FakeModelServer } from "../support/fake-model-server.js";
import { modelEnv, startHarness, text, type Harness } from "../support/harness.js";

// The first bytes of a PNG file and a little more: the server does not decode images.
const PNG = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), Buffer.from("not really pixels")]);
const PNG_B64 = PNG.toString("base64");
const GIF_DATA_URL = "data:image/gif;base64,R0lGODlhAQABAAAAACw=";

const imageInput = [
  { type: "text", text: "What is in these?" },
  { type: "image", url: "https://example.com/cat.png" },
  { type: "localImage", path: "pic.png" },
  { type: "image", url: GIF_DATA_URL },
];

type Failed = { error: { code: string; message: string } };

async function runTurn(h: Harness, threadId: string, input: unknown, extra: Record<string, unknown> = {}) {
  const turn = (await h.client.call("turn/start", { threadId, input, ...extra })).turn as { id: string };
  return h.client.turnEnd(threadId, turn.id);
}

function lastBody(fake: FakeModelServer) {
  return fake.requests.at(-1)!.body;
}

describe("attachments", () => {
  let fake: FakeModelServer;
  let h: Harness;
  before(async () => {
    fake = await FakeModelServer.start();
    h = await startHarness({ fake, env: { ...modelEnv(fake, "anthropic"), SWITCHYARD_PROVIDER: "openai-chat" } });
    fs.writeFileSync(path.join(h.workspace, "pic.png"), PNG);
    fs.writeFileSync(path.join(h.workspace, "notes.txt"), "line one\nline two\n");
    fs.writeFileSync(path.join(h.workspace, "blob.bin"), Buffer.from([1, 2, 0, 3]));
    fs.writeFileSync(path.join(h.workspace, "huge.png"), Buffer.alloc(5 * 1024 * 1024 + 1));
  });
  after(async () => {
    await h.close();
    await fake.close();
  });

  it("Chat Completions gets image_url parts, also from history after a restart", async () => {
    const first = await startHarness({ fake });
    fs.writeFileSync(path.join(first.workspace, "pic.png"), PNG);
    const threadId = await first.startThread();
    fake.enqueue({ kind: "response", text: "a cat" });
    try {
      assert.equal((await runTurn(first, threadId, imageInput)).method, "turn/completed");
    } finally {
      await first.close();
    }
    const expected = [
      { type: "text", text: "What is in these?" },
      { type: "image_url", image_url: { url: "https://example.com/cat.png" } },
      { type: "image_url", image_url: { url: `data:image/png;base64,${PNG_B64}` } },
      { type: "image_url", image_url: { url: GIF_DATA_URL } },
    ];
    const user = (body: { messages: Array<{ role: string; content: unknown }> }) => body.messages.find((m) => m.role === "user")!.content;
    assert.deepEqual(user(lastBody(fake)), expected);

    // A new server process rebuilds the history from the log and still sends the images.
    const second = await startHarness({ fake, dataDir: first.server.dataDir });
    try {
      await second.client.call("thread/resume", { threadId });
      fake.enqueue({ kind: "response", text: "still a cat" });
      assert.equal((await runTurn(second, threadId, text("and now?"))).method, "turn/completed");
      assert.deepEqual(user(lastBody(fake)), expected);
    } finally {
      await second.close();
    }
  });

  it("Responses gets input_image parts and Anthropic image blocks", async () => {
    const threadId = await h.startThread();
    fake.enqueue({ kind: "response", text: "ok" });
    await runTurn(h, threadId, imageInput, { provider: "openai", model: "gpt-4.1" });
    assert.equal(fake.requests.at(-1)!.path, "/v1/responses");
    const input = lastBody(fake).input as Array<{ role?: string; content: unknown }>;
    assert.deepEqual(input.find((i) => i.role === "user")!.content, [
      { type: "input_text", text: "What is in these?" },
      { type: "input_image", image_url: "https://example.com/cat.png", detail: "auto" },
      { type: "input_image", image_url: `data:image/png;base64,${PNG_B64}`, detail: "auto" },
      { type: "input_image", image_url: GIF_DATA_URL, detail: "auto" },
    ]);

    const claudeThread = await h.startThread({ configuration: { provider: "anthropic", model: "claude-haiku-4-5" } });
    fake.enqueue({ kind: "response", text: "ok" });
    await runTurn(h, claudeThread, imageInput);
    assert.equal(fake.requests.at(-1)!.path, "/v1/messages");
    assert.deepEqual((lastBody(fake).messages as Array<{ content: unknown }>)[0]!.content, [
      { type: "text", text: "What is in these?" },
      { type: "image", source: { type: "url", url: "https://example.com/cat.png" } },
      { type: "image", source: { type: "base64", media_type: "image/png", data: PNG_B64 } },
      { type: "image", source: { type: "base64", media_type: "image/gif", data: "R0lGODlhAQABAAAAACw=" } },
    ]);
  });

  it("fileRef attaches the file's contents; binary, missing and outside files fail the turn clearly", async () => {
    const threadId = await h.startThread();
    fake.enqueue({ kind: "response", text: "read it" });
    await runTurn(h, threadId, [
      { type: "text", text: "Summarize:" },
      { type: "fileRef", path: "notes.txt" },
    ]);
    const user = (lastBody(fake).messages as Array<{ role: string; content: unknown }>).find((m) => m.role === "user")!.content;
    assert.deepEqual(user, [
      { type: "text", text: "Summarize:" },
      { type: "text", text: '<file path="notes.txt">\nline one\nline two\n\n</file>' },
    ]);

    const requests = fake.requests.length;
    const cases: Array<[string, RegExp]> = [
      ["blob.bin", /binary/],
      ["missing.txt", /does not exist/],
      ["../outside.txt", /outside the workspace/],
    ];
    for (const [file, message] of cases) {
      const end = await runTurn(h, threadId, [{ type: "fileRef", path: file }]);
      assert.equal(end.method, "turn/failed");
      const { error } = end.params as unknown as Failed;
      assert.equal(error.code, "invalidInput");
      assert.match(error.message, message);
    }
    assert.equal(fake.requests.length, requests, "the model was not called");
  });

  it("an image past the size cap fails the turn with the limit in the message", async () => {
    const threadId = await h.startThread();
    const end = await runTurn(h, threadId, [{ type: "localImage", path: "huge.png" }]);
    assert.equal(end.method, "turn/failed");
    const { error } = end.params as unknown as Failed;
    assert.equal(error.code, "invalidInput");
    assert.match(error.message, /huge\.png.*5242881 bytes; the limit is 5242880 bytes/);
  });

  it("a model that takes no images fails the turn; images in its history become a note", async () => {
    const threadId = await h.startThread();
    fake.enqueue({ kind: "response", text: "seen" });
    await runTurn(h, threadId, imageInput);
    await h.client.call("thread/config/update", { threadId, configuration: { model: "o3-mini" } });
    const requests = fake.requests.length;
    const end = await runTurn(h, threadId, [{ type: "localImage", path: "pic.png" }]);
    assert.equal(end.method, "turn/failed");
    const { error } = end.params as unknown as Failed;
    assert.equal(error.code, "unsupportedInput");
    assert.match(error.message, /o3-mini does not take images/);
    assert.equal(fake.requests.length, requests);

    fake.enqueue({ kind: "response", text: "text only" });
    assert.equal((await runTurn(h, threadId, text("go on"))).method, "turn/completed");
    const first = (lastBody(fake).messages as Array<{ role: string; content: unknown }>).find((m) => m.role === "user")!.content as Array<{
      type: string;
      text: string;
    }>;
    assert.ok(first.every((p) => p.type === "text"));
    assert.match(first[1]!.text, /image: https:\/\/example.com\/cat.png — not sent: The model o3-mini does not take images/);
  });

  it("model/list says which models take images", async () => {
    const models = (await h.client.call("model/list", {})).data as Array<{ id: string; provider: string; inputModalities?: string[] }>;
    assert.deepEqual(models.find((m) => m.id === "gpt-4.1")?.inputModalities, ["text", "image"]);
    assert.deepEqual(models.find((m) => m.id === "claude-haiku-4-5")?.inputModalities, ["text", "image"]);
    assert.deepEqual(models.find((m) => m.id === "o3-mini")?.inputModalities, ["text"]);
  });
});
