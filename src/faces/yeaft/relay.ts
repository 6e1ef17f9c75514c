// The Yeaft relay server: HTTP and WebSocket on one port. `POST /api/auth/login` gives a
// browser a signed token (HS256, expiring; `POST /api/auth/logout` revokes it); the WebSocket
// endpoint takes agents (`?type=agent…`) and browsers (`?type=web`, token as `?token=`, bearer
// header or the HttpOnly cookie). Foreign Origins are refused; a non-loopback bind needs an
// explicit signing secret. Liveness is WebSocket ping/pong.
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { jwtVerify, SignJWT } from "jose";
import { WebSocketServer, type WebSocket } from "ws";
import type { Logger } from "../../log.js";
import type { FaceState } from "../../store/face-state.js";
import { isLoopbackHost } from "../../loopback.js";
import type { FaceListener } from "../face.js";
import { CLOSE_POLICY } from "./protocol.js";
import { Relay } from "./session.js";
import { UserStore } from "./users.js";

export interface RelayServerOptions {
  host: string;
  port: number;
  /** Where users.json and a generated signing secret live. */
  dataDir: string;
  /** Signs browser tokens; required for a non-loopback bind. */
  jwtSecret?: string;
  tokenTtlSeconds?: number;
  allowedOrigins?: string[];
  pingIntervalMs?: number;
  /** A peer silent (no pong, no message) this long is cut off. */
  deadAfterMs?: number;
  authTimeoutMs?: number;
}

const COOKIE = "yeaft_session";
/** Records: the ids (jti) of tokens logged out, and the generated signing secret. */
const REVOKED = "yeaft/revoked";
const SECRETS = "yeaft/secrets";
const LOGIN_WINDOW_MS = 60_000;
const LOGIN_ATTEMPTS = 10;

export async function startRelay(
  opts: RelayServerOptions,
  state: FaceState,
  log: Logger,
): Promise<FaceListener & { port: number; users: UserStore }> {
  if (!isLoopbackHost(opts.host) && !opts.jwtSecret) {
    throw new Error(`Refusing to listen on ${opts.host} without a signing secret: set --jwt-secret (or YEAFT_JWT_SECRET).`);
  }
  mkdirSync(opts.dataDir, { recursive: true, mode: 0o700 });
  const usersFile = path.join(opts.dataDir, "users.json");
  const users = state.shared ? await UserStore.shared(state, usersFile) : UserStore.inFile(usersFile);
  const key = new TextEncoder().encode(opts.jwtSecret ?? (await localSecret(opts.dataDir, state)));
  const ttl = opts.tokenTtlSeconds ?? 3 * 24 * 3600;
  const attempts = new Map<string, number[]>();
  const relay = new Relay({
    users,
    state,
    log,
    authTimeoutMs: opts.authTimeoutMs ?? 30_000,
    legacyPinsFile: path.join(opts.dataDir, "conversations.json"),
  });
  await relay.start();
  const web = webRoot();
  if (!web) log.warn("the web client is not built (dist/yeaft-web): the relay serves agents and the API only");

  const verify = async (token: string | undefined): Promise<string | undefined> => {
    if (!token) return undefined;
    try {
      const { payload } = await jwtVerify(token, key, { algorithms: ["HS256"] });
      if (typeof payload.sub !== "string" || (payload.jti && (await state.getRecord(REVOKED, payload.jti)))) return undefined;
      if (!(await users.find(payload.sub))) return undefined;
      return payload.sub;
    } catch {
      return undefined;
    }
  };

  const server = createServer((req, res) => {
    void handleHttp(req, res).catch((error: unknown) => {
      log.error({ err: error }, "yeaft http request failed");
      json(res, 500, { error: "internal error" });
    });
  });
  const handleHttp = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const url = new URL(req.url ?? "/", "http://relay");
    if (!originAllowed(req, opts.allowedOrigins ?? [])) return json(res, 403, { error: "Origin not allowed" });
    if (req.method === "POST" && url.pathname === "/api/auth/login") {
      const ip = req.socket.remoteAddress ?? "?";
      const now = Date.now();
      const recent = (attempts.get(ip) ?? []).filter((t) => now - t < LOGIN_WINDOW_MS);
      if (recent.length >= LOGIN_ATTEMPTS) return json(res, 429, { error: "Too many login attempts; wait a minute." });
      attempts.set(ip, [...recent, now]);
      const body = (await readJson(req)) as { username?: unknown; password?: unknown } | undefined;
      const user =
        typeof body?.username === "string" && typeof body.password === "string"
          ? await users.verify(body.username, body.password)
          : undefined;
      if (!user) return json(res, 401, { error: "Wrong username or password." });
      const token = await new SignJWT({})
        .setProtectedHeader({ alg: "HS256" })
        .setSubject(user.username)
        .setJti(randomBytes(12).toString("hex"))
        .setIssuedAt()
        .setExpirationTime(`${ttl}s`)
        .sign(key);
      res.setHeader("Set-Cookie", `${COOKIE}=${token}; HttpOnly; SameSite=Strict; Path=/; Max-Age=${ttl}`);
      return json(res, 200, { token, username: user.username });
    }
    if (req.method === "POST" && url.pathname === "/api/auth/logout") {
      const token = tokenOf(req, url);
      if (token) {
        try {
          const { payload } = await jwtVerify(token, key, { algorithms: ["HS256"] });
          if (payload.jti) await state.putRecord(REVOKED, payload.jti, String(payload.exp ?? ""));
        } catch {
          // An invalid token is logged out already.
        }
      }
      res.setHeader("Set-Cookie", `${COOKIE}=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0`);
      return json(res, 200, { ok: true });
    }
    if (req.method === "GET" && url.pathname === "/healthz") return json(res, 200, { ok: true });
    const file = req.method === "GET" ? WEB_FILES[url.pathname] : undefined;
    if (file && web) return serveFile(res, path.join(web, file.name), file.type);
    json(res, 404, { error: `No route for ${req.method} ${url.pathname}` });
  };

  const wss = new WebSocketServer({ noServer: true, maxPayload: 16 * 1024 * 1024 });
  const alive = new WeakMap<WebSocket, number>();
  server.on("upgrade", (req, socket, head) => {
    void (async () => {
      const url = new URL(req.url ?? "/", "http://relay");
      if (!originAllowed(req, opts.allowedOrigins ?? [])) {
        socket.end("HTTP/1.1 403 Forbidden\r\n\r\n");
        return;
      }
      const kind = url.searchParams.get("type");
      const username = kind === "web" ? await verify(tokenOf(req, url)) : undefined;
      wss.handleUpgrade(req, socket, head, (ws) => {
        alive.set(ws, Date.now());
        ws.on("pong", () => alive.set(ws, Date.now()));
        ws.on("message", () => alive.set(ws, Date.now()));
        if (kind === "agent") relay.acceptAgent(ws, url.searchParams);
        else if (kind === "web" && username) relay.acceptBrowser(ws, username);
        else {
          ws.send(
            JSON.stringify({
              type: "auth_result",
              success: false,
              message: kind === "web" ? "Log in first: a valid token is needed." : "Connect with ?type=web or ?type=agent.",
            }),
          );
          ws.close(CLOSE_POLICY, "Not authenticated");
        }
      });
    })();
  });
  const pingInterval = opts.pingIntervalMs ?? 30_000;
  const deadAfter = opts.deadAfterMs ?? 180_000;
  const pinger = setInterval(() => {
    for (const ws of wss.clients) {
      if (Date.now() - (alive.get(ws) ?? 0) > deadAfter) ws.terminate();
      else ws.ping();
    }
  }, pingInterval);
  pinger.unref();

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(opts.port, opts.host, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  const host = opts.host.includes(":") ? `[${opts.host}]` : opts.host;
  log.info({ url: `http://${host}:${port}/` }, "yeaft relay listening");
  return {
    url: `http://${host}:${port}/`,
    port,
    users,
    close: () =>
      new Promise<void>((resolve) => {
        clearInterval(pinger);
        relay.close();
        for (const ws of wss.clients) ws.terminate();
        server.close(() => resolve());
      }),
  };
}

/** The web client's files, built by scripts/bundle.mjs: the only paths served besides the API. */
const WEB_FILES: Record<string, { name: string; type: string }> = {
  "/": { name: "index.html", type: "text/html; charset=utf-8" },
  "/index.html": { name: "index.html", type: "text/html; charset=utf-8" },
  "/app.js": { name: "app.js", type: "text/javascript; charset=utf-8" },
  "/app.css": { name: "app.css", type: "text/css; charset=utf-8" },
  "/app.js.map": { name: "app.js.map", type: "application/json" },
  "/app.css.map": { name: "app.css.map", type: "application/json" },
};

/** Scripts and styles from the relay only; the page talks to the relay only; it is never framed. */
const CONTENT_SECURITY_POLICY =
  "default-src 'self'; connect-src 'self' ws: wss:; img-src 'self' data:; style-src 'self'; script-src 'self'; frame-ancestors 'none'; base-uri 'none'";

/** dist/yeaft-web, next to the bundle (dist/chunks) or above the unbundled build (dist/src/faces/yeaft). */
function webRoot(): string | undefined {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (let up = 0; up < 4; up++, dir = path.dirname(dir)) {
    if (existsSync(path.join(dir, "yeaft-web", "index.html"))) return path.join(dir, "yeaft-web");
  }
  return undefined;
}

function serveFile(res: ServerResponse, file: string, type: string): void {
  let body: Buffer;
  try {
    body = readFileSync(file);
  } catch {
    return json(res, 404, { error: "Not built" });
  }
  res.writeHead(200, {
    "content-type": type,
    "cache-control": "no-cache",
    "x-content-type-options": "nosniff",
    "content-security-policy": CONTENT_SECURITY_POLICY,
  });
  res.end(body);
}

/**
 * A signing secret for a loopback relay without one: generated once and kept in the store, so
 * that every relay of a cluster signs alike (a secret an older relay kept in its file is kept).
 */
async function localSecret(dataDir: string, state: FaceState): Promise<string> {
  const file = path.join(dataDir, "jwt-secret");
  const generated = existsSync(file) ? readFileSync(file, "utf8").trim() : randomBytes(32).toString("base64url");
  await state.putRecord(SECRETS, "jwt", generated, { ifAbsent: true });
  return (await state.getRecord(SECRETS, "jwt"))!.value;
}

function tokenOf(req: IncomingMessage, url: URL): string | undefined {
  const query = url.searchParams.get("token");
  if (query) return query;
  const bearer = /^Bearer\s+(\S+)$/i.exec(req.headers.authorization ?? "");
  if (bearer) return bearer[1];
  const cookie = (req.headers.cookie ?? "")
    .split(";")
    .map((c) => c.trim())
    .find((c) => c.startsWith(`${COOKIE}=`));
  return cookie?.slice(COOKIE.length + 1) || undefined;
}

/** No Origin (a program), or one the relay serves itself, or one allowed explicitly. */
function originAllowed(req: IncomingMessage, allowed: string[]): boolean {
  const origin = req.headers.origin;
  if (!origin) return true;
  if (allowed.includes(origin)) return true;
  try {
    return new URL(origin).host === req.headers.host;
  } catch {
    return false;
  }
}

function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify(body));
}

async function readJson(req: IncomingMessage): Promise<unknown> {
  let text = "";
  for await (const chunk of req) {
    text += String(chunk);
    if (text.length > 64 * 1024) return undefined;
  }
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}
