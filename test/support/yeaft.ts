// Yeaft test helpers: users added through the real CLI, and the login API.
import { spawn } from "node:child_process";
import WebSocket from "ws";
import { childEnv, CLI_PATH } from "./server-process.js";
import { fetchOrSayWhy } from "./fetch.js";

/** Adds a user with `switchyard yeaft user add` (password on stdin); resolves with its agent secret. */
export function addUser(dataDir: string, name: string, password: string, env: Record<string, string> = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI_PATH, "yeaft", "user", "add", name, "--data-dir", dataDir], { env: childEnv(env) });
    let out = "";
    child.stdout.on("data", (c: Buffer) => (out += c.toString()));
    child.stdin.end(`${password}\n`);
    child.once("exit", (code) => (code === 0 ? resolve(out.trim().split("\n").at(-1)!) : reject(new Error(`user add exited ${code}`))));
  });
}

/** POST /api/auth/login: the status, the token and the session cookie. */
export async function login(
  base: string,
  username: string,
  password: string,
): Promise<{ status: number; token?: string; cookie?: string | null }> {
  const res = await fetchOrSayWhy(`${base}/api/auth/login`, {
    method: "POST",
    body: JSON.stringify({ username, password }),
    headers: { "content-type": "application/json" },
  });
  const body = (await res.json()) as { token?: string };
  return { status: res.status, ...(body.token ? { token: body.token } : {}), cookie: res.headers.get("set-cookie") };
}

export type Msg = Record<string, unknown> & { type: string };

/** A raw WebSocket peer that keeps every message and can wait for one. */
export class Peer {
  readonly received: Msg[] = [];
  closed: { code: number; reason: string } | undefined;
  private wake: Array<() => void> = [];
  private constructor(readonly ws: WebSocket) {
    ws.on("message", (raw) => {
      this.received.push(JSON.parse(raw.toString()) as Msg);
      this.wake.splice(0).forEach((w) => w());
    });
    ws.on("close", (code, reason) => {
      this.closed = { code, reason: reason.toString() };
      this.wake.splice(0).forEach((w) => w());
    });
  }

  static open(url: string, headers: Record<string, string> = {}, options: { autoPong?: boolean } = {}): Promise<Peer> {
    const ws = new WebSocket(url, { headers, ...options });
    const peer = new Peer(ws);
    return new Promise((resolve, reject) => {
      ws.once("open", () => resolve(peer));
      ws.once("error", reject);
    });
  }

  send(msg: Record<string, unknown>): void {
    this.ws.send(JSON.stringify(msg));
  }

  async waitFor(match: (m: Msg) => boolean, timeoutMs = 15_000): Promise<Msg> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = this.received.find(match);
      if (found) return found;
      if (this.closed) throw new Error(`closed (${this.closed.code} ${this.closed.reason}) while waiting`);
      if (Date.now() > deadline) throw new Error(`timed out; received ${JSON.stringify(this.received.slice(-5))}`);
      await new Promise<void>((resolve) => {
        this.wake.push(resolve);
        setTimeout(resolve, 200);
      });
    }
  }

  async waitClosed(): Promise<{ code: number; reason: string }> {
    while (!this.closed) await new Promise<void>((resolve) => this.wake.push(resolve));
    return this.closed;
  }
}
