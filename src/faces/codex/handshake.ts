// The Codex dialect's answer to initialize, apart from the session: like AppServer's (see
// appserver/handshake.ts), a stdio client's first request is answered before the runtime (store,
// protocol tables, zod) has loaded. The answer depends on nothing the runtime knows.
import os from "node:os";
import path from "node:path";
import { isObject } from "../plain-params.js";

/** The Codex release whose app-server protocol this dialect speaks (test/agents pins it; clients read it in userAgent). */
export const CODEX_PROTOCOL_VERSION = "0.169.0";

export function codexInitializeResult(serverVersion: string): {
  userAgent: string;
  codexHome: string;
  platformFamily: string;
  platformOs: string;
} {
  return {
    // Clients read the first version in it as the protocol version they talk to.
    userAgent: `switchyard_codex/${CODEX_PROTOCOL_VERSION} (${os.type()} ${os.release()}; ${os.arch()}) switchyard/${serverVersion}`,
    codexHome: process.env.CODEX_HOME ?? path.join(os.homedir(), ".codex"),
    platformFamily: process.platform === "win32" ? "windows" : "unix",
    platformOs: process.platform === "darwin" ? "macos" : process.platform === "win32" ? "windows" : process.platform,
  };
}

/**
 * Whether `params` are initialize params the protocol table's schema certainly accepts; anything
 * else waits for that schema (and its error). Never looser than the schema:
 * test/faces/codex/handshake.test.ts holds the two together.
 */
export function isPlainCodexInitialize(params: unknown): boolean {
  if (!isObject(params) || !isObject(params.clientInfo) || typeof params.clientInfo.name !== "string") return false;
  const { title, version } = params.clientInfo;
  if (!nullishOr(title, "string") || !nullishOr(version, "string")) return false;
  return params.capabilities === undefined || params.capabilities === null || isObject(params.capabilities);
}

function nullishOr(value: unknown, type: "string"): boolean {
  return value === undefined || value === null || typeof value === type;
}
