// The WebSocket transport, client side: a MessageChannel over a `ws` client socket, so a
// client runs the same JSON-RPC engine (RpcConnection) as the server does.
import { WebSocket } from "ws";
import { silentLogger } from "../log.js";
import type { MessageChannel } from "./channel.js";
import { createWebSocketChannel } from "./websocket-channel.js";

export interface WebSocketClientOptions {
  /** Sent as `Authorization: Bearer <token>`: kept out of the URL, so out of access logs. */
  token?: string;
  headers?: Record<string, string>;
  /** Largest accepted incoming message. Default 256 MiB. */
  maxMessageBytes?: number;
  /** Default 10000. */
  handshakeTimeoutMs?: number;
  /**
   * Pings the server this often; a server that sent nothing since the previous ping (no pong, no
   * message) is taken as gone and the socket ended. A hung process or a broken network otherwise
   * leaves the socket open, silent, for as long as TCP takes to notice. 0: no pings.
   */
  heartbeatMs?: number;
}

const DEFAULT_MAX_MESSAGE_BYTES = 256 * 1024 * 1024;

/** Opens the socket; resolves once it is open, rejects if the handshake fails (e.g. "Unexpected server response: 401"). */
export function connectWebSocketChannel(url: string, opts: WebSocketClientOptions = {}): Promise<MessageChannel> {
  const headers = { ...opts.headers, ...(opts.token ? { Authorization: `Bearer ${opts.token}` } : {}) };
  const maxMessageBytes = opts.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES;
  const ws = new WebSocket(url, {
    headers,
    // A little above the cap, so a frame just over it is reported rather than closing the socket.
    maxPayload: maxMessageBytes + 64 * 1024,
    handshakeTimeout: opts.handshakeTimeoutMs ?? 10_000,
  });
  return new Promise((resolve, reject) => {
    const onError = (err: Error): void => reject(err);
    ws.once("error", onError);
    ws.once("open", () => {
      ws.off("error", onError);
      if (opts.heartbeatMs) watchHeartbeat(ws, opts.heartbeatMs);
      resolve(createWebSocketChannel(ws, { remote: url, maxMessageBytes, log: silentLogger }));
    });
  });
}

function watchHeartbeat(ws: WebSocket, intervalMs: number): void {
  let heard = true;
  const hear = (): void => {
    heard = true;
  };
  ws.on("pong", hear);
  ws.on("message", hear);
  const timer = setInterval(() => {
    if (!heard) {
      ws.terminate(); // its close event ends the channel
      return;
    }
    heard = false;
    ws.ping();
  }, intervalMs);
  timer.unref();
  ws.once("close", () => clearInterval(timer));
}
