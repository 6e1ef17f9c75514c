// Yeaft test helpers: users added through the real CLI, and the login API.
import { spawn } from "node:child_process";
import { childEnv, CLI_PATH } from "./server-process.js";

/** Adds a user with `switchyard yeaft user add` (password on stdin); resolves with its agent secret. */
export function addUser(dataDir: string, name: string, password: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI_PATH, "yeaft", "user", "add", name, "--data-dir", dataDir], { env: childEnv() });
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
  const res = await fetch(`${base}/api/auth/login`, {
    method: "POST",
    body: JSON.stringify({ username, password }),
    headers: { "content-type": "application/json" },
  });
  const body = (await res.json()) as { token?: string };
  return { status: res.status, ...(body.token ? { token: body.token } : {}), cookie: res.headers.get("set-cookie") };
}
