// The Hub: one per user, on loopback HTTP, that finds or starts a workspace's app server. It is
// found through `hub.lock` in the data directory ({pid, apiBaseUrl, token, startedAt, version});
// every call needs that token as a bearer header. A workspace server is a `switchyard app-server`
// on a loopback WebSocket with a token of its own, recorded in the workspace's
// `.craft/appserver.lock`; it stops by itself after being idle, and a lock whose process is gone
// is stale and replaced.
import { spawn } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import fs from "node:fs";
import http from "node:http";
import net from "node:net";
import path from "node:path";
import { bearerToken, sameSecret } from "../bearer.js";
import { writeFileDurably } from "../durable-file.js";
import { readBody, sendJson as send } from "../http-json.js";
import type { Logger } from "../log.js";
import { pidAlive } from "../pid.js";
import { VERSION } from "../version.js";

export interface HubLock {
  pid: number;
  apiBaseUrl: string;
  token: string;
  startedAt: string;
  version: string;
}

export interface WorkspaceServer {
  workspacePath: string;
  pid: number;
  /** ws://127.0.0.1:PORT/ws */
  endpoint: string;
  token: string;
  startedAt: string;
}

export interface HubOptions {
  dataDir: string;
  /** The switchyard CLI script, to start workspace servers with. */
  cliPath: string;
  /** Workspace servers exit after this long with no client and no running turn. */
  idleTimeoutMs: number;
  env: NodeJS.ProcessEnv;
  log: Logger;
}

export class HubRunningError extends Error {
  constructor(readonly lock: HubLock) {
    super(`A Hub is already running (pid ${lock.pid}, ${lock.apiBaseUrl}).`);
  }
}

export const hubLockPath = (dataDir: string): string => path.join(dataDir, "hub.lock");
export const workspaceLockPath = (workspacePath: string): string => path.join(workspacePath, ".craft", "appserver.lock");
const STARTUP_TIMEOUT_MS = 15_000;

export function readJson<T>(file: string): T | undefined {
  try {
    return JSON.parse(fs.readFileSync(file, "utf8")) as T;
  } catch {
    return undefined;
  }
}

/** Starts the Hub; throws HubRunningError when a live one holds the lock. */
export async function startHub(options: HubOptions): Promise<{ lock: HubLock; close(): Promise<void> }> {
  const lockFile = hubLockPath(options.dataDir);
  const existing = readJson<HubLock>(lockFile);
  if (existing && existing.pid !== process.pid && pidAlive(existing.pid)) throw new HubRunningError(existing);

  const token = randomBytes(24).toString("base64url");
  /** Servers being started now, by workspace; and every workspace this Hub started one for. */
  const starting = new Map<string, Promise<WorkspaceServer>>();
  const known = new Set<string>();
  const server = http.createServer((req, res) => {
    handle(req, res).catch((error: unknown) => send(res, 500, { error: error instanceof Error ? error.message : String(error) }));
  });
  async function handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    // Browsers are not clients of the Hub: a page could otherwise drive it with a stolen token.
    if (req.headers.origin) return send(res, 403, { error: "Browser requests are not accepted." });
    const given = bearerToken(req.headers.authorization);
    if (!given || !sameSecret(given, token)) return send(res, 401, { error: "Missing or invalid token." });
    const url = new URL(req.url ?? "/", "http://hub");
    if (req.method === "GET" && url.pathname === "/v1/status") {
      return send(res, 200, { ...lock, token: undefined, appServers: liveServers([...known]) });
    }
    if (req.method === "POST" && url.pathname === "/v1/appservers/ensure") {
      let body: { workspacePath?: unknown; startIfMissing?: unknown };
      try {
        body = JSON.parse(await readBody(req, 64 * 1024)) as typeof body;
      } catch {
        return send(res, 400, { error: "The body must be JSON: {workspacePath, startIfMissing?}." });
      }
      if (typeof body.workspacePath !== "string" || !isDirectory(body.workspacePath))
        return send(res, 400, { error: "workspacePath must be an existing directory." });
      const workspacePath = fs.realpathSync(body.workspacePath);
      const running = runningServer(workspacePath);
      if (running) return send(res, 200, { ...running, started: false });
      if (body.startIfMissing === false) return send(res, 404, { error: `No app server runs for ${workspacePath}.` });
      // Two ensures of one workspace at once start one server.
      let pending = starting.get(workspacePath);
      const started = !pending;
      if (!pending) {
        pending = startWorkspaceServer(workspacePath, options);
        starting.set(workspacePath, pending);
        known.add(workspacePath);
        void pending.then(
          () => starting.delete(workspacePath),
          () => starting.delete(workspacePath),
        );
      }
      return send(res, 200, { ...(await pending), started });
    }
    send(res, 404, { error: `No such endpoint: ${req.method} ${url.pathname}` });
  }

  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as net.AddressInfo;
  const lock: HubLock = {
    pid: process.pid,
    apiBaseUrl: `http://127.0.0.1:${port}`,
    token,
    startedAt: new Date().toISOString(),
    version: VERSION,
  };
  writeFileDurably(lockFile, `${JSON.stringify(lock, null, 2)}\n`, 0o600);
  options.log.info({ apiBaseUrl: lock.apiBaseUrl }, "hub listening");
  return {
    lock,
    close: async () => {
      await new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      });
      if (readJson<HubLock>(lockFile)?.pid === process.pid) fs.rmSync(lockFile, { force: true });
    },
  };
}

/** The workspace's server from its lock, if that process is alive; a stale lock is removed. */
function runningServer(workspacePath: string): WorkspaceServer | undefined {
  const file = workspaceLockPath(workspacePath);
  const lock = readJson<WorkspaceServer>(file);
  if (!lock) return undefined;
  if (pidAlive(lock.pid)) return lock;
  fs.rmSync(file, { force: true });
  return undefined;
}

/** The servers this Hub started that still run, without their tokens. */
function liveServers(workspaces: string[]): Array<Omit<WorkspaceServer, "token">> {
  return workspaces.flatMap((workspacePath) => {
    const running = runningServer(workspacePath);
    if (!running) return [];
    const { token: _token, ...shown } = running;
    return [shown];
  });
}

async function startWorkspaceServer(workspacePath: string, options: HubOptions): Promise<WorkspaceServer> {
  const id = createHash("sha256").update(workspacePath).digest("hex").slice(0, 16);
  const dir = path.join(options.dataDir, "hub", id);
  fs.mkdirSync(dir, { recursive: true });
  const port = await freePort();
  const token = randomBytes(24).toString("base64url");
  const logFd = fs.openSync(path.join(dir, "server.log"), "a");
  const child = spawn(
    process.execPath,
    [
      options.cliPath,
      "app-server",
      "--listen",
      `ws://127.0.0.1:${port}`,
      "--data-dir",
      path.join(dir, "data"),
      "--exit-when-idle-ms",
      String(options.idleTimeoutMs),
    ],
    // Detached: a workspace server outlives the Hub; the next Hub finds it by its lock.
    { cwd: workspacePath, env: { ...options.env, SWITCHYARD_TOKEN: token }, stdio: ["ignore", "ignore", logFd], detached: true },
  );
  fs.closeSync(logFd);
  child.unref();
  const exited = new Promise<never>((_resolve, reject) =>
    child.once("exit", (code) => reject(new Error(`The workspace server exited (code ${code}); see ${path.join(dir, "server.log")}.`))),
  );
  exited.catch(() => {});
  await Promise.race([waitReady(port), exited]);
  const server: WorkspaceServer = {
    workspacePath,
    pid: child.pid!,
    endpoint: `ws://127.0.0.1:${port}/ws`,
    token,
    startedAt: new Date().toISOString(),
  };
  writeFileDurably(workspaceLockPath(workspacePath), `${JSON.stringify(server, null, 2)}\n`, 0o600);
  options.log.info({ workspacePath, pid: server.pid, endpoint: server.endpoint }, "workspace server started");
  return server;
}

/** Waits until the server's /readyz answers 200 (its WebSocket listener is up). */
async function waitReady(port: number): Promise<void> {
  const deadline = Date.now() + STARTUP_TIMEOUT_MS;
  for (let delay = 25; Date.now() < deadline; delay = Math.min(delay * 2, 250)) {
    const ok = await new Promise<boolean>((resolve) => {
      const req = http.get({ host: "127.0.0.1", port, path: "/readyz" }, (res) => {
        res.resume();
        resolve(res.statusCode === 200);
      });
      req.on("error", () => resolve(false));
    });
    if (ok) return;
    await new Promise((resolve) => setTimeout(resolve, delay));
  }
  throw new Error(`The workspace server did not become ready in ${STARTUP_TIMEOUT_MS} ms.`);
}

function isDirectory(p: string): boolean {
  try {
    return fs.statSync(p).isDirectory();
  } catch {
    return false;
  }
}

async function freePort(): Promise<number> {
  const probe = net.createServer();
  await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
  const { port } = probe.address() as net.AddressInfo;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}
