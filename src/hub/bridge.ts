// `switchyard app-server --hub`: find the Hub (or start it), ensure this directory's workspace
// server through it, and bridge stdio to that server's WebSocket, one JSON-RPC message per line,
// so a stdio client uses the one shared server of its workspace.
import { spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import readline from "node:readline";
import { pidAlive } from "../pid.js";
import { hubLockPath, readJson, type HubLock, type WorkspaceServer } from "./hub.js";

const HUB_START_TIMEOUT_MS = 15_000;

export async function bridgeThroughHub(options: {
  dataDir: string;
  cliPath: string;
  env: NodeJS.ProcessEnv;
  workspacePath: string;
}): Promise<void> {
  const hub = await findOrStartHub(options);
  const response = await fetch(`${hub.apiBaseUrl}/v1/appservers/ensure`, {
    method: "POST",
    headers: { authorization: `Bearer ${hub.token}`, "content-type": "application/json" },
    body: JSON.stringify({ workspacePath: options.workspacePath, startIfMissing: true }),
  });
  const body = (await response.json()) as WorkspaceServer & { error?: string };
  if (!response.ok) throw new Error(`The Hub could not start the workspace server: ${body.error ?? response.status}`);

  const { WebSocket } = await import("ws");
  const ws = new WebSocket(body.endpoint, { headers: { authorization: `Bearer ${body.token}` } });
  await new Promise<void>((resolve, reject) => {
    ws.once("open", resolve);
    ws.once("error", reject);
  });
  const lines = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
  lines.on("line", (line) => {
    if (line.trim()) ws.send(line);
  });
  lines.on("close", () => ws.close());
  ws.on("message", (data) => process.stdout.write(`${String(data)}\n`));
  await new Promise<void>((resolve) => ws.once("close", () => resolve()));
  lines.close();
}

/** The running Hub's lock, starting a Hub (detached, for every later client) when none answers. */
export async function findOrStartHub(options: { dataDir: string; cliPath: string; env: NodeJS.ProcessEnv }): Promise<HubLock> {
  const lockFile = hubLockPath(options.dataDir);
  const running = await answering(readJson<HubLock>(lockFile));
  if (running) return running;
  fs.mkdirSync(options.dataDir, { recursive: true });
  const logFd = fs.openSync(path.join(options.dataDir, "hub.log"), "a");
  const child = spawn(process.execPath, [options.cliPath, "hub", "--data-dir", options.dataDir], {
    env: options.env,
    stdio: ["ignore", "ignore", logFd],
    detached: true,
  });
  fs.closeSync(logFd);
  child.unref();
  const deadline = Date.now() + HUB_START_TIMEOUT_MS;
  for (let delay = 25; Date.now() < deadline; delay = Math.min(delay * 2, 250)) {
    const lock = readJson<HubLock>(lockFile);
    if (lock && lock.pid === child.pid && (await answering(lock))) return lock;
    await new Promise((resolve) => setTimeout(resolve, delay));
  }
  throw new Error(`The Hub did not start in ${HUB_START_TIMEOUT_MS} ms; see ${path.join(options.dataDir, "hub.log")}.`);
}

/** The lock if its Hub is alive and answers /v1/status. */
async function answering(lock: HubLock | undefined): Promise<HubLock | undefined> {
  if (!lock || !pidAlive(lock.pid)) return undefined;
  try {
    const response = await fetch(`${lock.apiBaseUrl}/v1/status`, { headers: { authorization: `Bearer ${lock.token}` } });
    return response.ok ? lock : undefined;
  } catch {
    return undefined;
  }
}
