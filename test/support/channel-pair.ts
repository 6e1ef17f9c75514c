// In-memory MessageChannels for tests: two connected ends, with asynchronous delivery like a
// real transport, and a raw peer that queues what it receives.
import type { ChannelInfo, MessageChannel } from "../../src/transport/channel.js";

export interface MemoryChannel extends MessageChannel {
  /** Pretends the transport discarded an oversized incoming message. */
  simulateOversized(size: number, limit: number): void;
}

export function createChannelPair(): [MemoryChannel, MemoryChannel] {
  const a = new MemoryEnd({ transport: "stdio", remote: "memory-a" });
  const b = new MemoryEnd({ transport: "stdio", remote: "memory-b" });
  a.peer = b;
  b.peer = a;
  return [a, b];
}

class MemoryEnd implements MemoryChannel {
  peer: MemoryEnd | undefined;
  private readonly messageListeners: Array<(m: string) => void> = [];
  private readonly oversizedListeners: Array<(size: number, limit: number) => void> = [];
  private readonly closeListeners: Array<() => void> = [];
  private closed = false;

  constructor(readonly info: ChannelInfo) {}

  send(message: string): void {
    if (this.closed) return;
    const peer = this.peer;
    setImmediate(() => peer?.deliver(message));
  }
  onMessage(listener: (message: string) => void): void {
    this.messageListeners.push(listener);
  }
  onOversized(listener: (size: number, limit: number) => void): void {
    this.oversizedListeners.push(listener);
  }
  onClose(listener: () => void): void {
    this.closeListeners.push(listener);
  }
  close(): void {
    if (this.closed) return;
    this.closed = true;
    for (const l of this.closeListeners.splice(0)) l();
    const peer = this.peer;
    setImmediate(() => peer?.close());
  }
  simulateOversized(size: number, limit: number): void {
    setImmediate(() => {
      for (const l of this.oversizedListeners) l(size, limit);
    });
  }
  private deliver(message: string): void {
    if (this.closed) return;
    for (const l of this.messageListeners) l(message);
  }
}

/** A raw test peer: sends text as is and hands out received messages, parsed, in order. */
export class RawPeer {
  private readonly queue: unknown[] = [];
  private readonly waiters: Array<(m: unknown) => void> = [];
  readonly closed: Promise<void>;

  constructor(readonly channel: MessageChannel) {
    channel.onMessage((text) => {
      const parsed: unknown = JSON.parse(text);
      const waiter = this.waiters.shift();
      if (waiter) waiter(parsed);
      else this.queue.push(parsed);
    });
    this.closed = new Promise((resolve) => channel.onClose(resolve));
  }

  send(message: unknown): void {
    this.channel.send(typeof message === "string" ? message : JSON.stringify(message));
  }

  next(): Promise<unknown> {
    if (this.queue.length > 0) return Promise.resolve(this.queue.shift());
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  /** Sends one message and waits for the next one received. */
  async call(message: unknown): Promise<unknown> {
    this.send(message);
    return this.next();
  }

  get pending(): number {
    return this.queue.length;
  }
}
