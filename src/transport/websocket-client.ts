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
      resolve(createWebSocketChannel(ws, { remote: url, maxMessageBytes, log: silentLogger }));
    });
  });
}
