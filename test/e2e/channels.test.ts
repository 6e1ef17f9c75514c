// External channels over a real server: configurations validated and stored, and the webhook
// channel: a chat's messages start and continue its thread, replies go to the outbound URL.
import assert from "node:assert/strict";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, it } from "node:test";
import { startHarness, type Harness } from "../support/harness.js";
import { fetchOrSayWhy } from "../support/fetch.js";
import { freePort } from "../support/server-process.js";

type Reply = { channel: string; chatId: string; threadId: string; turnId: string; text: string | null; error: string | null };

describe("external channels", () => {
  let h: Harness;
  let serverWorkspace: string;
  const replies: Reply[] = [];
  const waiting: Array<() => void> = [];
  let outbound: http.Server;
  let outboundUrl: string;
  before(async () => {
    outbound = http.createServer(async (req, res) => {
      let body = "";
      for await (const chunk of req) body += String(chunk);
      replies.push(JSON.parse(body) as Reply);
      res.end();
      for (const wake of waiting.splice(0)) wake();
    });
    await new Promise<void>((resolve) => outbound.listen(0, "127.0.0.1", resolve));
    outboundUrl = `http://127.0.0.1:${(outbound.address() as AddressInfo).port}/replies`;
    h = await startHarness({ env: { HOOK_SECRET: "s3cret" } });
    // The server runs the webhook channels of its own workspace: the directory it started in.
    serverWorkspace = h.server.dataDir;
  });
  after(async () => {
    await h.close();
    outbound.closeAllConnections();
    await new Promise<void>((resolve) => outbound.close(() => resolve()));
  });

  const request = (method: string, params: Record<string, unknown>) =>
    h.client.request(method, { workspacePath: serverWorkspace, ...params });
  const nextReply = (count: number): Promise<Reply> =>
    new Promise((resolve) => {
      const check = (): void => (replies.length >= count ? resolve(replies[count - 1]!) : void waiting.push(check));
      check();
    });

  it("validates and stores configurations", async () => {
    const bad = (channel: Record<string, unknown>) => request("externalChannel/upsert", { channel: { enabled: true, ...channel } });
    assert.equal((await bad({ name: "tg", transport: "subprocess" })).error?.code, -32081);
    assert.equal((await bad({ name: "tg", transport: "websocket", command: "x" })).error?.code, -32081);
    assert.equal((await bad({ name: "hook", transport: "webhook", outboundUrl })).error?.code, -32081);
    assert.equal((await bad({ name: "Yeaft", transport: "websocket" })).error?.code, -32082);
    const saved = await request("externalChannel/upsert", {
      channel: { name: "tg", enabled: false, transport: "subprocess", command: "python", args: ["-m", "bot"] },
    });
    assert.equal((saved.result?.channel as { command: string }).command, "python");
    assert.equal((await bad({ name: "TG", transport: "websocket" })).error?.code, -32082);
    assert.deepEqual(
      ((await request("externalChannel/list", {})).result?.channels as Array<{ name: string }>).map((c) => c.name),
      ["tg"],
    );
    assert.equal((await request("externalChannel/remove", { name: "tg" })).result?.removed, true);
    assert.equal((await request("externalChannel/get", { name: "tg" })).error?.code, -32080);
  });

  it("the webhook channel turns a chat's messages into turns on its thread and posts the replies", async () => {
    const port = await freePort();
    const listening = h.server.waitForLog((line) => line.msg === "webhook channel listening" && line.port === port);
    const upserted = await request("externalChannel/upsert", {
      channel: { name: "hook", enabled: true, transport: "webhook", port, outboundUrl, secretEnvVar: "HOOK_SECRET" },
    });
    assert.equal(upserted.error, undefined);
    await listening;

    const send = (text: string, token = "s3cret") =>
      fetchOrSayWhy(`http://127.0.0.1:${port}/`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        body: JSON.stringify({ chatId: "chat-1", userId: "u1", text }),
      });
    assert.equal((await send("hello", "wrong")).status, 401);

    h.fake.enqueue({ kind: "response", text: "hi there" }, { kind: "response", text: "still here" });
    const first = await send("hello");
    assert.equal(first.status, 202);
    const { threadId } = (await first.json()) as { threadId: string };
    const reply = await nextReply(1);
    assert.deepEqual(reply, { channel: "hook", chatId: "chat-1", threadId, turnId: reply.turnId, text: "hi there", error: null });

    const second = (await (await send("are you there?")).json()) as { threadId: string };
    assert.equal(second.threadId, threadId, "the chat continues its thread");
    assert.equal((await nextReply(2)).text, "still here");
    const messages = (h.fake.requests.at(-1)!.body as { messages: Array<{ role: string; content: unknown }> }).messages;
    assert.deepEqual(
      messages.filter((m) => m.role !== "system").map((m) => m.content),
      ["hello", "hi there", "are you there?"],
    );

    const stopped = h.server.waitForLog((line) => line.msg === "channel stopped" && line.channel === "hook");
    await request("externalChannel/remove", { name: "hook" });
    await stopped;
    await assert.rejects(send("anyone?"));
  });
});
