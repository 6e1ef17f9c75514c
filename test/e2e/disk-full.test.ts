// A full disk: the server says so, keeps serving reads, refuses writes with a clear error, holds
// a running turn's events until the disk has room again, and loses or corrupts nothing.
// Real disk full: the data directory sits on a small tmpfs filled with a filler file. Mounting
// needs root; elsewhere the tests are skipped (they say why).
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { after, before, describe, it } from "node:test";
import Database from "better-sqlite3";
import { FakeModelServer } from "../support/fake-model-server.js";
import { modelEnv, makeWorkspace, text, threadStartParams } from "../support/harness.js";
import { ServerProcess, tempDir } from "../support/server-process.js";
import { FULL_CAPABILITIES, TestClient, type Message } from "../support/test-client.js";

/** Mounts a small tmpfs, or says why it can't. */
function mountSmallDisk(): { dir: string; unmount: () => void } | string {
  const dir = tempDir("small-disk");
  try {
    execFileSync("mount", ["-t", "tmpfs", "-o", "size=16m", "tmpfs", dir], { stdio: "pipe" });
  } catch (err) {
    return `cannot mount a tmpfs here (${(err as Error).message.split("\n")[0]})`;
  }
  return { dir, unmount: () => execFileSync("umount", ["-l", dir]) };
}

/** Fills the disk of `dir` up to the last byte; returns the filler's path. */
function fillDisk(dir: string): string {
  const filler = `${dir}/filler`;
  const chunk = Buffer.alloc(256 * 1024);
  writeFileSync(filler, "");
  for (const size of [chunk.length, 4096, 1]) {
    const piece = chunk.subarray(0, size);
    try {
      for (;;) writeFileSync(filler, piece, { flag: "a" });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "ENOSPC") throw err;
    }
  }
  return filler;
}

const statusChanged = (status: string) => (m: Message) => m.method === "server/statusChanged" && m.params?.status === status;

// On PostgreSQL (SWITCHYARD_TEST_STORE=postgres) the data directory's disk holds no thread;
// an unreachable database is tested in postgres.test.ts. Nothing is mounted then: a skipped
// suite's `after` does not run, so its disk would stay mounted.
const disk = process.env.SWITCHYARD_TEST_STORE === "postgres" ? "threads are in PostgreSQL, not on this disk" : mountSmallDisk();
const skip = typeof disk === "string" ? disk : false;
const diskDir = typeof disk === "string" ? "" : disk.dir;

describe("a full disk", { skip }, () => {
  let fake: FakeModelServer;
  let dataDir: string;
  let workspace: string;
  before(async () => {
    fake = await FakeModelServer.start();
    if (typeof disk === "string") return;
    dataDir = `${diskDir}/data`;
    mkdirSync(dataDir);
    workspace = makeWorkspace();
  });
  after(async () => {
    await fake.close();
    if (typeof disk !== "string") disk.unmount();
  });

  it("holds a running turn until there is room, refuses writes meanwhile, and loses nothing", async () => {
    const deltas = Array.from({ length: 3000 }, (_, i) => `d${i}${"x".repeat(200)} `);
    let server = ServerProcess.spawn({ dataDir, env: modelEnv(fake) });
    const client = TestClient.overStdio(server.child);
    await client.initialize(FULL_CAPABILITIES);
    const threadId = ((await client.call("thread/start", threadStartParams(workspace))).thread as { id: string }).id;

    fake.enqueue({ kind: "response", text: deltas, chunkDelayMs: 1 });
    await client.call("turn/start", { threadId, input: text("write a lot") });
    await client.waitFor((m) => m.method === "item/agentMessage/delta" && m.params?.threadId === threadId);
    const filler = fillDisk(diskDir);

    const down = await client.waitFor(statusChanged("storageUnavailable"), 30_000);
    assert.match(String(down.params?.cause), /SQLITE_FULL|SQLITE_IOERR|ENOSPC/);
    assert.match(String(down.params?.message), /cannot be written/);
    // Reads still work; a write gets a stable code and a readable message.
    const list = await client.call("thread/list", {});
    assert.ok((list.data as Array<{ id: string }>).some((t) => t.id === threadId));
    const refused = await client.request("thread/start", threadStartParams(workspace));
    assert.equal(refused.error?.code, -32030);
    assert.match(refused.error!.message, /cannot be written/);

    rmSync(filler);
    await client.waitFor(statusChanged("ok"), 30_000);
    const completed = await client.waitFor((m) => m.method === "turn/completed" && m.params?.threadId === threadId, 60_000);
    assert.equal((completed.params?.turn as { status: string }).status, "completed");
    const streamed = client.received
      .filter((m) => m.method === "item/agentMessage/delta" && m.params?.threadId === threadId)
      .map((m) => m.params!.delta as string);
    assert.equal(streamed.join(""), deltas.join(""), "every delta, once, in order");
    await server.kill();

    // Nothing persisted was lost or corrupted.
    const db = new Database(`${dataDir}/switchyard.db`, { readonly: true });
    assert.equal(db.pragma("integrity_check", { simple: true }), "ok");
    db.close();
    server = ServerProcess.spawn({ dataDir, env: modelEnv(fake) });
    const again = TestClient.overStdio(server.child);
    await again.initialize(FULL_CAPABILITIES);
    const read = await again.call("thread/read", { threadId, includeTurns: true });
    const turns = (read.thread as { turns: Array<{ status: string; items: Array<{ type: string; payload: { text?: string } }> }> }).turns;
    assert.equal(turns[0]!.status, "completed");
    assert.equal(turns[0]!.items.find((i) => i.type === "agentMessage")?.payload.text, deltas.join(""));
    await server.kill();
  });

  it("fails a turn that waited longer than --storage-timeout-ms, and records why once it can", async () => {
    const server = ServerProcess.spawn({ dataDir, env: modelEnv(fake), args: ["--storage-timeout-ms", "300"] });
    try {
      const client = TestClient.overStdio(server.child);
      await client.initialize(FULL_CAPABILITIES);
      const threadId = ((await client.call("thread/start", threadStartParams(workspace))).thread as { id: string }).id;
      fake.enqueue({ kind: "response", text: ["one ", "two ", "three"], holdOpen: true });
      await client.call("turn/start", { threadId, input: text("never ends") });
      await client.waitFor((m) => m.method === "item/agentMessage/delta" && m.params?.threadId === threadId);
      const filler = fillDisk(diskDir);
      // The held-open stream makes no writes of its own: a client write is what meets the full disk.
      const refused = await client.request("thread/start", threadStartParams(workspace));
      if (refused.error === undefined) await client.waitFor(statusChanged("storageUnavailable"), 30_000);
      await server.waitForLog((l) => l.msg === "turn aborted: the data directory stayed unwritable");
      rmSync(filler);
      const failed = await client.waitFor((m) => m.method === "turn/failed" && m.params?.threadId === threadId, 30_000);
      const turn = failed.params?.turn as { status: string; error?: { code: string } };
      assert.equal(turn.status, "failed");
      assert.equal(turn.error?.code, "storageUnavailable");
    } finally {
      await server.kill();
    }
  });
});
