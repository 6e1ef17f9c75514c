// The Hub with real processes: its lock and token, ensuring workspace servers (the same one
// twice, one per workspace, a new one after kill -9), a stale Hub lock, a second Hub refused,
// `app-server --hub` bridging stdio, and a workspace server's idle exit.
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { after, describe, it } from "node:test";
import { pidAlive } from "../../src/pid.js";
import { makeWorkspace } from "../support/harness.js";
import { ServerProcess, tempDir } from "../support/server-process.js";
import { TestClient } from "../support/test-client.js";
import { fetchOrSayWhy } from "../support/fetch.js";

type Lock = { pid: number; apiBaseUrl: string; token: string; startedAt: string; version: string };
type Ensured = { workspacePath: string; pid: number; endpoint: string; token: string; started: boolean };

/** Processes the Hub starts detached; killed when the file ends. */
const detached = new Set<number>();
after(() => {
  for (const pid of detached) if (pidAlive(pid)) process.kill(pid, "SIGKILL");
});

async function startHub(dataDir = tempDir("hub")): Promise<{ hub: ServerProcess; lock: Lock; dataDir: string }> {
  const hub = ServerProcess.spawn({ command: "hub", dataDir });
  await hub.waitForLog((line) => line.msg === "hub listening");
  const lock = JSON.parse(fs.readFileSync(path.join(dataDir, "hub.lock"), "utf8")) as Lock;
  return { hub, lock, dataDir };
}

async function ensure(lock: Lock, workspacePath: string, extra: Record<string, unknown> = {}): Promise<Ensured> {
  const response = await fetchOrSayWhy(`${lock.apiBaseUrl}/v1/appservers/ensure`, {
    method: "POST",
    headers: { authorization: `Bearer ${lock.token}`, "content-type": "application/json" },
    body: JSON.stringify({ workspacePath, ...extra }),
  });
  assert.equal(response.status, 200, await response.clone().text());
  const ensured = (await response.json()) as Ensured;
  detached.add(ensured.pid);
  return ensured;
}

async function connect(server: Ensured): Promise<TestClient> {
  const client = await TestClient.overWebSocket(server.endpoint, { headers: { authorization: `Bearer ${server.token}` } });
  await client.initialize();
  return client;
}

describe("the Hub", () => {
  it("writes its lock and answers only its token, and never a browser", async () => {
    const { hub, lock } = await startHub();
    try {
      assert.equal(lock.pid, hub.child.pid);
      assert.match(lock.apiBaseUrl, /^http:\/\/127\.0\.0\.1:\d+$/);
      assert.equal((await fetchOrSayWhy(`${lock.apiBaseUrl}/v1/status`)).status, 401);
      assert.equal((await fetchOrSayWhy(`${lock.apiBaseUrl}/v1/status`, { headers: { authorization: "Bearer wrong" } })).status, 401);
      const fromPage = await fetchOrSayWhy(`${lock.apiBaseUrl}/v1/status`, {
        headers: { authorization: `Bearer ${lock.token}`, origin: "http://evil.example" },
      });
      assert.equal(fromPage.status, 403);
      const status = (await (
        await fetchOrSayWhy(`${lock.apiBaseUrl}/v1/status`, { headers: { authorization: `Bearer ${lock.token}` } })
      ).json()) as Lock;
      assert.equal(status.pid, lock.pid);
      assert.equal((status as { token?: string }).token, undefined, "the status does not repeat the token");
    } finally {
      await hub.kill();
    }
  });

  it("ensures one server per workspace, the same one twice, and a new one after kill -9", async () => {
    const { hub, lock } = await startHub();
    try {
      const a = makeWorkspace();
      const b = makeWorkspace();
      const first = await ensure(lock, a);
      assert.equal(first.started, true);
      const again = await ensure(lock, a);
      assert.deepEqual({ ...again, started: true }, first, "the same endpoint, not started again");
      assert.equal(again.started, false);
      const other = await ensure(lock, b);
      assert.notEqual(other.endpoint, first.endpoint);

      const client = await connect(first);
      const thread = (await client.call("thread/start", {})).thread as { workspacePath: string };
      assert.equal(thread.workspacePath, fs.realpathSync(a), "the server runs in its workspace");
      client.close();
      const lockFile = JSON.parse(fs.readFileSync(path.join(a, ".craft", "appserver.lock"), "utf8")) as Ensured;
      assert.equal(lockFile.endpoint, first.endpoint);

      process.kill(first.pid, "SIGKILL");
      await waitUntil(() => !pidAlive(first.pid));
      const replaced = await ensure(lock, a);
      assert.equal(replaced.started, true);
      assert.notEqual(replaced.pid, first.pid);
      (await connect(replaced)).close();

      const missing = await fetchOrSayWhy(`${lock.apiBaseUrl}/v1/appservers/ensure`, {
        method: "POST",
        headers: { authorization: `Bearer ${lock.token}` },
        body: JSON.stringify({ workspacePath: makeWorkspace(), startIfMissing: false }),
      });
      assert.equal(missing.status, 404);
      const notADir = await fetchOrSayWhy(`${lock.apiBaseUrl}/v1/appservers/ensure`, {
        method: "POST",
        headers: { authorization: `Bearer ${lock.token}` },
        body: JSON.stringify({ workspacePath: "/no/such/dir" }),
      });
      assert.equal(notADir.status, 400);
    } finally {
      await hub.kill();
    }
  });

  it("replaces a stale lock, and refuses to start beside a live Hub", async () => {
    const dataDir = tempDir("hub");
    fs.writeFileSync(
      path.join(dataDir, "hub.lock"),
      JSON.stringify({ pid: 2 ** 22 + 12345, apiBaseUrl: "http://127.0.0.1:1", token: "old", startedAt: "", version: "0" }),
    );
    const { hub, lock } = await startHub(dataDir);
    try {
      assert.equal(lock.pid, hub.child.pid);
      const second = ServerProcess.spawn({ command: "hub", dataDir });
      const { code } = await second.exited;
      assert.notEqual(code, 0);
      assert.match(second.stderr, /A Hub is already running/);
    } finally {
      await hub.kill();
    }
    assert.equal(fs.existsSync(path.join(dataDir, "hub.lock")), false, "a Hub that stops removes its lock");
  });

  it("app-server --hub starts the Hub and bridges stdio to the workspace's server", async () => {
    const dataDir = tempDir("hub");
    const workspace = makeWorkspace();
    const bridge = ServerProcess.spawn({ dataDir, cwd: workspace, args: ["--hub"] });
    const client = TestClient.overStdio(bridge.child);
    try {
      await client.initialize();
      const thread = (await client.call("thread/start", {})).thread as { workspacePath: string };
      assert.equal(thread.workspacePath, fs.realpathSync(workspace));
      const hubLock = JSON.parse(fs.readFileSync(path.join(dataDir, "hub.lock"), "utf8")) as Lock;
      detached.add(hubLock.pid);
      const server = JSON.parse(fs.readFileSync(path.join(workspace, ".craft", "appserver.lock"), "utf8")) as Ensured;
      detached.add(server.pid);
      assert.ok(pidAlive(hubLock.pid) && pidAlive(server.pid));
    } finally {
      client.close();
      await bridge.kill();
    }
  });

  it("a server started with --exit-when-idle-ms exits once no client has been connected for that long", async () => {
    const server = ServerProcess.spawn({
      args: ["--listen", "ws://127.0.0.1:0", "--exit-when-idle-ms", "300"],
      env: { SWITCHYARD_TOKEN: "t" },
    });
    server.child.stdin.end();
    const listening = await server.waitForLog((line) => line.msg === "listening");
    const client = await TestClient.overWebSocket(String(listening.url), { headers: { authorization: "Bearer t" } });
    await client.initialize();
    client.close();
    const { code } = await server.exited;
    assert.equal(code, 0);
    assert.match(server.stderr, /idle: stopping/);
  });
});

/** Polls for a state of another process (there is no event to await). */
async function waitUntil(done: () => boolean, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!done()) {
    if (Date.now() > deadline) throw new Error("timed out");
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
