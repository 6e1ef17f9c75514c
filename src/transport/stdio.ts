// The stdio transport: UTF-8 JSON Lines, one message per line, over any pair of streams.
import type { Readable, Writable } from "node:stream";
import type { ChannelInfo, MessageChannel } from "./channel.js";

export interface StdioChannelOptions {
  maxMessageBytes: number;
  /** How the channel shows in logs (default: stdio); a Unix socket connection is JSON Lines too. */
  info?: ChannelInfo;
  /**
   * A server's stdin: when it ends, the channel stays open for output until close(), so what the
   * client asked is still answered (see MessageChannel.onInputEnd). Off for a child process's
   * stdout: a peer that has exited gets no answers.
   */
  outputOutlivesInput?: boolean;
}

const LF = 0x0a;
/** How often waiters for a drain look at pending output when the stream does not say. */
const DRAIN_POLL_MS = 50;
const CR = 0x0d;

/**
 * Splits a byte stream into lines without ever holding more than about `limit` bytes: a line
 * that grows past the cap is discarded up to its newline and reported once, with its full size.
 */
class LineSplitter {
  private chunks: Buffer[] = [];
  private buffered = 0;
  /** Bytes of the current line, counted even while discarding. */
  private lineBytes = 0;
  private discarding = false;

  constructor(
    private readonly limit: number,
    private readonly onLine: (line: Buffer) => void,
    private readonly onOversized: (size: number) => void,
  ) {}

  push(chunk: Buffer): void {
    let start = 0;
    while (start < chunk.length) {
      const nl = chunk.indexOf(LF, start);
      const end = nl === -1 ? chunk.length : nl;
      this.append(chunk, start, end);
      if (nl === -1) return;
      this.endLine();
      start = nl + 1;
    }
  }

  /** Input ended: a last line without a newline still counts. */
  finish(): void {
    if (this.lineBytes > 0) this.endLine();
  }

  private append(chunk: Buffer, start: number, end: number): void {
    const n = end - start;
    if (n === 0) return;
    this.lineBytes += n;
    if (this.discarding) return;
    // One byte of slack for a trailing "\r", which is not part of the message.
    if (this.lineBytes > this.limit + 1) {
      this.discarding = true;
      this.chunks = [];
      this.buffered = 0;
      return;
    }
    // Copy: the source chunk may be large and we keep only this slice.
    this.chunks.push(Buffer.from(chunk.subarray(start, end)));
    this.buffered += n;
  }

  private endLine(): void {
    let line = this.chunks.length === 1 ? this.chunks[0]! : Buffer.concat(this.chunks, this.buffered);
    let size = this.lineBytes;
    if (!this.discarding && line.length > 0 && line[line.length - 1] === CR) {
      line = line.subarray(0, line.length - 1);
      size--;
    }
    const oversized = this.discarding || size > this.limit;
    this.chunks = [];
    this.buffered = 0;
    this.lineBytes = 0;
    this.discarding = false;
    if (oversized) this.onOversized(size);
    else if (size > 0) this.onLine(line);
  }
}

export function createStdioChannel(input: Readable, output: Writable, opts: StdioChannelOptions): MessageChannel {
  const info: ChannelInfo = opts.info ?? { transport: "stdio", remote: "stdio" };
  const messageListeners: Array<(message: string) => void> = [];
  const oversizedListeners: Array<(size: number, limit: number) => void> = [];
  const closeListeners: Array<() => void> = [];
  const inputEndListeners: Array<() => void> = [];
  let closed = false;
  let inputEnded = false;
  const outbox: string[] = [];
  let outboxChars = 0;
  const drain = (): void => {
    const text = outbox.join("\n") + "\n";
    outbox.length = 0;
    outboxChars = 0;
    if (!output.destroyed && !output.writableEnded) output.write(text);
    checkDrained();
  };
  const pendingBytes = (): number => output.writableLength + outboxChars;

  // Waiters for pending output to fall low. Checked after each write, on the stream's "drain"
  // (which it emits only after a write that filled its buffer) and, as a fallback for levels
  // below that buffer's size, on a slow timer while anyone waits.
  const drainWaiters = new Map<() => void, number>();
  let drainTimer: NodeJS.Timeout | undefined;
  const checkDrained = (): void => {
    for (const [resolve, lowWater] of drainWaiters) {
      if (closed || output.destroyed || pendingBytes() <= lowWater) {
        drainWaiters.delete(resolve);
        resolve();
      }
    }
    if (drainWaiters.size === 0 && drainTimer) {
      clearInterval(drainTimer);
      drainTimer = undefined;
    }
  };
  output.on("drain", checkDrained);

  const splitter = new LineSplitter(
    opts.maxMessageBytes,
    (line) => {
      // Splitting on the LF byte is safe in UTF-8: it never occurs inside a multibyte character.
      const text = line.toString("utf8");
      if (text.trim() === "") return; // blank lines are ignored
      for (const l of messageListeners) l(text);
    },
    (size) => {
      for (const l of oversizedListeners) l(size, opts.maxMessageBytes);
    },
  );

  const onData = (chunk: Buffer | string): void => {
    if (closed) return;
    splitter.push(typeof chunk === "string" ? Buffer.from(chunk, "utf8") : chunk);
  };
  const onEnd = (): void => {
    if (closed || inputEnded) return;
    inputEnded = true;
    splitter.finish();
    stopReading();
    if (!opts.outputOutlivesInput || inputEndListeners.length === 0 || output.destroyed) return doClose();
    for (const l of inputEndListeners.splice(0)) l();
  };
  // A broken pipe on output (the peer went away) must not crash the process; it ends the channel.
  const onOutputError = (): void => doClose();

  function doClose(): void {
    if (closed) return;
    closed = true;
    stopReading();
    output.off("drain", checkDrained);
    checkDrained();
    for (const l of closeListeners.splice(0)) l();
  }

  function stopReading(): void {
    input.off("data", onData);
    input.off("end", onEnd);
    input.off("close", onEnd);
    // The "error" listener stays so a late stream error cannot become an uncaught exception.
    input.pause();
  }

  input.on("data", onData);
  input.on("end", onEnd);
  input.on("close", onEnd);
  input.on("error", onEnd);
  output.on("error", onOutputError);

  return {
    info,
    send(message) {
      if (closed || output.destroyed || output.writableEnded) return;
      // Messages sent in the same tick (a burst of streamed deltas) go out in one write.
      if (outbox.length === 0) queueMicrotask(drain);
      outbox.push(message);
      outboxChars += message.length + 1;
    },
    pendingBytes,
    whenDrained(lowWaterBytes) {
      return new Promise<void>((resolve) => {
        drainWaiters.set(resolve, lowWaterBytes);
        drainTimer ??= setInterval(checkDrained, DRAIN_POLL_MS).unref();
        checkDrained();
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
    onInputEnd(listener) {
      inputEndListeners.push(listener);
    },
    close() {
      doClose();
    },
  };
}
