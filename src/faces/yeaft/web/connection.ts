// The browser's WebSocket to the relay: connects with the session cookie (set by the login
// API), reconnects with backoff when the connection drops, and stops when the relay refuses the
// session (close 1008: log in again).

export type ConnectionState = "connecting" | "open" | "reconnecting" | "refused";

export interface RelayConnectionEvents {
  onMessage(msg: Envelope): void;
  onState(state: ConnectionState): void;
}

export type Envelope = { type: string } & Record<string, unknown>;

const CLOSE_POLICY = 1008;
const FIRST_RETRY_MS = 500;
const MAX_RETRY_MS = 15_000;

export class RelayConnection {
  private ws: WebSocket | undefined;
  private retryMs = FIRST_RETRY_MS;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private stopped = false;

  constructor(private readonly events: RelayConnectionEvents) {}

  connect(): void {
    this.stopped = false;
    this.open("connecting");
  }

  send(msg: Envelope): boolean {
    if (this.ws?.readyState !== WebSocket.OPEN) return false;
    this.ws.send(JSON.stringify(msg));
    return true;
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
    this.ws?.close();
  }

  private open(state: ConnectionState): void {
    this.events.onState(state);
    const url = new URL("/", location.href);
    url.protocol = location.protocol === "https:" ? "wss:" : "ws:";
    url.searchParams.set("type", "web");
    const ws = new WebSocket(url);
    this.ws = ws;
    ws.onmessage = (event) => {
      let msg: unknown;
      try {
        msg = JSON.parse(String(event.data));
      } catch {
        return;
      }
      if (typeof msg !== "object" || msg === null || typeof (msg as Envelope).type !== "string") return;
      if ((msg as Envelope).type === "auth_result" && (msg as Envelope).success === true) {
        this.retryMs = FIRST_RETRY_MS;
        this.events.onState("open");
      }
      this.events.onMessage(msg as Envelope);
    };
    ws.onclose = (event) => {
      if (this.ws !== ws || this.stopped) return;
      if (event.code === CLOSE_POLICY) return this.events.onState("refused");
      const wait = this.retryMs;
      this.retryMs = Math.min(this.retryMs * 2, MAX_RETRY_MS);
      this.events.onState("reconnecting");
      this.timer = setTimeout(() => this.open("reconnecting"), wait);
    };
  }
}
