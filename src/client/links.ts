// Opening a transport for the client: a spawned server over stdio, or a WebSocket. A Link is
// one such connection; the client opens a new one per (re)connection.
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import type { Logger } from "../log.js";
import type { MessageChannel } from "../transport/channel.js";
import { createStdioChannel } from "../transport/stdio.js";
import { connectWebSocketChannel } from "../transport/websocket-client.js";
import type { ConnectTarget, StdioTarget, WebSocketTarget } from "./types.js";

export interface Link {
  channel: MessageChannel;
  /** Which of a WebSocket target's URLs it connected to. */
  urlIndex?: number;
  /** Closes the channel; for a spawned server, also stops it and waits until it has exited. */
  dispose(): Promise<void>;
}

/** The bundled CLI: dist/src/client/links.js -> dist/switchyard.js */
export const CLI_PATH = fileURLToPath(new URL("../../switchyard.js", import.meta.url));

/** Server answers (thread/read with a long history) can be large; this only guards against runaway lines. */
const MAX_MESSAGE_BYTES = 256 * 1024 * 1024;
/** How long a spawned server gets to shut down after SIGTERM before it is killed. */
const STOP_GRACE_MS = 5_000;

/** Opens a link; a WebSocket target's URLs are tried in turn from `firstUrl`. */
export function openLink(target: ConnectTarget, log: Logger, firstUrl = 0, heartbeatMs = 0): Promise<Link> {
  if (target.transport === "stdio") return spawnServer(target, log);
  return connectAny(target, firstUrl, heartbeatMs, log);
}

async function connectAny(target: WebSocketTarget, firstUrl: number, heartbeatMs: number, log: Logger): Promise<Link> {
  const urls = typeof target.url === "string" ? [target.url] : target.url;
  if (urls.length === 0) throw new Error("No server URL to connect to");
  let failure: unknown;
  for (let i = 0; i < urls.length; i++) {
    const urlIndex = (firstUrl + i) % urls.length;
    try {
      const channel = await connectWebSocketChannel(urls[urlIndex]!, { heartbeatMs, ...(target.token ? { token: target.token } : {}) });
      return { channel, urlIndex, dispose: async () => channel.close() };
    } catch (error) {
      log.debug({ err: error, url: urls[urlIndex] }, "could not connect");
      failure = error;
    }
  }
  throw failure;
}

async function spawnServer(target: StdioTarget, log: Logger): Promise<Link> {
  const command = target.command ?? process.execPath;
  const args = target.command ? (target.args ?? ["app-server"]) : [CLI_PATH, "app-server", ...(target.args ?? [])];
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const [key, value] of Object.entries(target.env ?? {})) {
    if (value === undefined) delete env[key];
    else env[key] = value;
  }
  const stderr = target.stderr ?? "inherit";
  const child = spawn(command, args, {
    env,
    ...(target.cwd ? { cwd: target.cwd } : {}),
    stdio: ["pipe", "pipe", typeof stderr === "function" ? "pipe" : stderr],
  });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  await new Promise<void>((resolve, reject) => {
    child.once("spawn", resolve);
    child.once("error", reject); // e.g. ENOENT: the command does not exist
  });
  child.on("error", (err) => log.debug({ err }, "server process error"));
  if (typeof stderr === "function" && child.stderr) {
    child.stderr.setEncoding("utf8");
    child.stderr.on("data", stderr);
  }
  log.debug({ pid: child.pid, command, args }, "spawned server");
  const { stdin, stdout } = child;
  if (!stdin || !stdout) throw new Error("the server process has no stdio pipes"); // cannot happen with "pipe"
  const channel = createStdioChannel(stdout, stdin, { maxMessageBytes: MAX_MESSAGE_BYTES });

  const running = (): boolean => child.exitCode === null && child.signalCode === null;
  return {
    channel,
    async dispose() {
      channel.close();
      stdin.end();
      if (running()) child.kill("SIGTERM");
      const timer = setTimeout(() => running() && child.kill("SIGKILL"), STOP_GRACE_MS);
      await exited;
      clearTimeout(timer);
    },
  };
}
