// A message channel: a bidirectional stream of whole text messages (one JSON-RPC message or
// batch each). Transports (stdio JSONL, WebSocket, Unix socket) implement it; the JSON-RPC
// engine runs on top of any of them.

export interface ChannelInfo {
  transport: "stdio" | "websocket" | "unix";
  /** Remote address or a descriptive label, for logs. */
  remote: string;
}

export interface MessageChannel {
  readonly info: ChannelInfo;
  /** Sends one message. Silently dropped once the channel is closed. */
  send(message: string): void;
  onMessage(listener: (message: string) => void): void;
  /**
   * Called when an incoming message exceeded the transport's size cap; the transport has
   * already discarded it. `size` is the number of bytes seen (at least limit + 1).
   */
  onOversized(listener: (size: number, limit: number) => void): void;
  onClose(listener: () => void): void;
  /**
   * The peer has sent all it will (stdin ended) while output can still reach it. A channel that
   * has a listener for this stays open until close(); without one it closes at once.
   */
  onInputEnd?(listener: () => void): void;
  close(): void;
  /**
   * Output accepted by send() that the peer has not taken yet, in bytes (approximately). A
   * channel that cannot tell leaves it out and is never considered behind.
   */
  pendingBytes?(): number;
  /** Resolves once the pending output has fallen to `lowWaterBytes` or less, or the channel closed. */
  whenDrained?(lowWaterBytes: number): Promise<void>;
}
