// A MessageChannel over one WebSocket, for both ends: the server's accepted sockets and the
// client's. One JSON-RPC message per text frame; binary frames are read as UTF-8 text.
import { WebSocket, type RawData } from "ws";
import type { Logger } from "../log.js";
import type { ChannelInfo, MessageChannel } from "./channel.js";

/** A peer that reads nothing of its pending output for this long is closed (1008, "stalled"). */
export const DEFAULT_STALL_TIMEOUT_MS = 60_000;
/** How often pending output is looked at while some is waiting (ws has no drain event of its own). */
const PROGRESS_POLL_MS = 50;
/** Frames held together at most, before they are written. */
const CORKED_BYTES = 64 * 1024;

export interface WebSocketChannelOptions {
  remote: string;
  maxMessageBytes: number;
  log: Logger;
  /** Unsent bytes the connection may hold before it is closed as too slow. */
  maxBufferedBytes?: number;
  /** How long a peer may take nothing of pending output before it is closed as stalled. */
  stallTimeoutMs?: number;
  /**
   * The connection's socket, when the caller has it (a server's upgraded request): the frames
   * sent in one go (a commit's events, to a client following its threads) are written to it
   * together, in one system call instead of one each.
   */
  socket?: { cork(): void; uncork(): void };
}

export function createWebSocketChannel(ws: WebSocket, options: WebSocketChannelOptions): MessageChannel {
  const { remote, maxMessageBytes, log, socket } = options;
  const maxBufferedBytes = options.maxBufferedBytes ?? 64 * 1024 * 1024;
  const stallTimeoutMs = options.stallTimeoutMs ?? DEFAULT_STALL_TIMEOUT_MS;
  const info: ChannelInfo = { transport: "websocket", remote };
  let corked = false;
  const uncork = (): void => {
    corked = false;
    socket!.uncork();
  };
  const messageListeners: Array<(message: string) => void> = [];
  const oversizedListeners: Array<(size: number, limit: number) => void> = [];
  const closeListeners: Array<() => void> = [];
  let closed = false;

  const fireClose = (): void => {
    if (closed) return;
    closed = true;
    clearInterval(watch);
    for (const l of closeListeners.splice(0)) l();
  };

  // While output is pending, watch the peer take it: wake whoever waits for it to drain, and
  // close a peer that takes nothing for stallTimeoutMs (it answers pings, but does not read).
  const drainWaiters: Array<{ lowWater: number; resolve: () => void }> = [];
  let watch: NodeJS.Timeout | undefined;
  let lastPending = 0;
  let lastProgressAt = 0;
  const startWatching = (): void => {
    if (watch || closed) return;
    lastPending = ws.bufferedAmount;
    lastProgressAt = Date.now();
    watch = setInterval(() => {
      const pending = ws.bufferedAmount;
      if (pending < lastPending) lastProgressAt = Date.now();
      lastPending = pending;
      for (let i = drainWaiters.length - 1; i >= 0; i--) {
        if (pending <= drainWaiters[i]!.lowWater) drainWaiters.splice(i, 1)[0]!.resolve();
      }
      if (pending === 0 && drainWaiters.length === 0) {
        clearInterval(watch);
        watch = undefined;
      } else if (pending > 0 && Date.now() - lastProgressAt >= stallTimeoutMs) {
        log.warn({ remote, pending, stallTimeoutMs }, "closing a WebSocket peer that stopped reading");
        ws.close(1008, `Stalled: the client read nothing for ${Math.round(stallTimeoutMs / 1000)} s`);
        setTimeout(() => ws.terminate(), 1_000).unref();
        fireClose();
      }
    }, PROGRESS_POLL_MS);
    watch.unref();
  };
  closeListeners.push(() => drainWaiters.splice(0).forEach((w) => w.resolve()));

  ws.on("message", (data: RawData) => {
    if (closed) return;
    // Binary frames are accepted too and read as UTF-8 text.
    const bytes = toBuffer(data);
    if (bytes.length > maxMessageBytes) {
      for (const l of oversizedListeners) l(bytes.length, maxMessageBytes);
      return;
    }
    const text = bytes.toString("utf8");
    for (const l of messageListeners) l(text);
  });
  ws.on("error", (err) => log.debug({ err, remote }, "WebSocket error"));
  ws.on("close", (code, reason) => {
    log.debug({ remote, code, reason: reason.toString() }, "WebSocket closed");
    fireClose();
  });

  return {
    info,
    send(message) {
      if (closed || ws.readyState !== WebSocket.OPEN) return;
      // A peer that answers pings but does not read would make us buffer without bound. Cut it
      // off; a client that reconnects catches up from the event log (thread/subscribe afterSeq).
      if (ws.bufferedAmount > maxBufferedBytes) {
        log.warn({ remote, buffered: ws.bufferedAmount }, "closing a WebSocket peer that does not read its messages");
        ws.close(1008, "Too slow: messages are not being read");
        setTimeout(() => ws.terminate(), 1_000).unref();
        fireClose();
        return;
      }
      if (socket && !corked) {
        corked = true;
        socket.cork();
        queueMicrotask(uncork);
      } else if (corked && ws.bufferedAmount > CORKED_BYTES) {
        // A long run goes out in parts, as the kernel takes it, not held as the client's backlog.
        socket!.uncork();
        socket!.cork();
      }
      ws.send(message);
      if (ws.bufferedAmount > 0) startWatching();
    },
    pendingBytes: () => ws.bufferedAmount,
    whenDrained(lowWaterBytes) {
      if (closed || ws.bufferedAmount <= lowWaterBytes) return Promise.resolve();
      return new Promise<void>((resolve) => {
        drainWaiters.push({ lowWater: lowWaterBytes, resolve });
        startWatching();
      });
    },
    onMessage(listener) {
      messageListeners.push(listener);
    },
    onOversized(listener) {
      oversizedListeners.push(listener);
    },
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

function toBuffer(data: RawData): Buffer {
  if (Buffer.isBuffer(data)) return data;
  if (Array.isArray(data)) return Buffer.concat(data);
  return Buffer.from(data);
}
