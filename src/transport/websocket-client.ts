// The WebSocket transport, client side: a MessageChannel over a `ws` client socket, so a
// client runs the same JSON-RPC engine (RpcConnection) as the server does.
import { WebSocket, type RawData } from "ws";
import type { ChannelInfo, MessageChannel } from "./channel.js";

export interface WebSocketClientOptions {
  /** Sent as `Authorization: Bearer <token>`: kept out of the URL, so out of access logs. */
  token?: string;
  headers?: Record<string, string>;
  /** Largest accepted incoming frame; a larger one closes the socket (1009). Default 256 MiB. */
  maxMessageBytes?: number;
  /** Default 10000. */
  handshakeTimeoutMs?: number;
}

const DEFAULT_MAX_MESSAGE_BYTES = 256 * 1024 * 1024;

/** Opens the socket; resolves once it is open, rejects if the handshake fails (e.g. "Unexpected server response: 401"). */
export function connectWebSocketChannel(url: string, opts: WebSocketClientOptions = {}): Promise<MessageChannel> {
  const headers = { ...opts.headers, ...(opts.token ? { Authorization: `Bearer ${opts.token}` } : {}) };
  const ws = new WebSocket(url, {
    headers,
    maxPayload: opts.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES,
    handshakeTimeout: opts.handshakeTimeoutMs ?? 10_000,
  });
  return new Promise((resolve, reject) => {
    const onError = (err: Error): void => reject(err);
    ws.once("error", onError);
    ws.once("open", () => {
      ws.off("error", onError);
      resolve(channelOver(ws, url));
    });
  });
}

function channelOver(ws: WebSocket, url: string): MessageChannel {
  const info: ChannelInfo = { transport: "websocket", remote: url };
  const messageListeners: Array<(message: string) => void> = [];
  const closeListeners: Array<() => void> = [];
  let closed = false;

  const fireClose = (): void => {
    if (closed) return;
    closed = true;
    for (const l of closeListeners.splice(0)) l();
  };

  ws.on("message", (data: RawData) => {
    if (closed) return;
    const text = Buffer.isBuffer(data) ? data.toString("utf8") : Array.isArray(data) ? Buffer.concat(data).toString("utf8") : Buffer.from(data).toString("utf8");
    for (const l of messageListeners) l(text);
  });
  // An error is always followed by "close"; listening keeps it from becoming an uncaught exception.
  ws.on("error", () => undefined);
  ws.on("close", fireClose);

  return {
    info,
    send(message) {
      if (!closed && ws.readyState === WebSocket.OPEN) ws.send(message);
    },
    onMessage(listener) {
      messageListeners.push(listener);
    },
    // Oversized frames make `ws` close the socket itself (maxPayload), so this never fires.
    onOversized() {},
    onClose(listener) {
      if (closed) queueMicrotask(listener);
      else closeListeners.push(listener);
    },
    close() {
      if (ws.readyState === WebSocket.OPEN || ws.readyState === WebSocket.CONNECTING) {
        ws.close(1000);
        // A peer that never completes the closing handshake (hung, stopped) is cut off.
        setTimeout(() => ws.terminate(), 1_000).unref();
      }
      fireClose();
    },
  };
}
