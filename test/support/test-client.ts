// A deliberately plain JSON-RPC client for end-to-end tests: raw messages in, raw messages
// out, over a child's stdio or a WebSocket. Tests can send bytes the typed client never would.
import type { ChildProcessWithoutNullStreams } from "node:child_process";
import { WebSocket } from "ws";

export interface Message {
  jsonrpc?: string;
  id?: string | number | null;
  method?: string;
  params?: Record<string, unknown> & { [key: string]: unknown };
  result?: Record<string, unknown> & { [key: string]: unknown };
  error?: { code: number; message: string; data?: unknown };
}

type ServerRequestHandler = (params: Message["params"]) => unknown | Promise<unknown>;

const DEFAULT_TIMEOUT_MS = 10_000;

export const FULL_CAPABILITIES = {
  approvalSupport: true,
  streamingSupport: true,
  commandExecutionStreaming: true,
  toolExecutionLifecycle: true,
  configChange: true,
};

export class TestClient {
  /** Every message received, in order. */
  readonly received: Message[] = [];
  /** The method of every request sent, by id, to pair responses with what they answer. */
  readonly sentRequests = new Map<string | number, string>();
  private waiters: Array<{ match: (m: Message) => boolean; resolve: (m: Message) => void }> = [];
  /**
   * Requests waiting for their response, by id: not among `waiters`, which every message is
   * matched against (with 200 turn/starts in flight, the cluster bench's clients spent more of
   * the cores they share with the nodes matching each delta against each of them).
   */
  private readonly responseWaiters = new Map<string | number, (m: Message) => void>();
  private readonly handlers = new Map<string, ServerRequestHandler>();
  private nextId = 1;
  private closedResolve!: () => void;
  readonly closed = new Promise<void>((resolve) => (this.closedResolve = resolve));
  /** Leave "jsonrpc" out of what this client sends, as Codex's clients do. */
  omitJsonrpc = false;
  /** Whether messages are kept in `received` (a bench of 100,000s of events turns it off). */
  keep = true;
  /** Called with every message as it is parsed. */
  onMessage: ((m: Message) => void) | undefined;

  private constructor(
    private readonly write: (text: string) => void,
    private readonly end: () => void,
    /** Stops and restarts reading what the server sends (a client that stalls). */
    private readonly flow: { pause(): void; resume(): void },
  ) {}

  static overStdio(child: ChildProcessWithoutNullStreams): TestClient {
    const client = new TestClient(
      (text) => child.stdin.write(text + "\n"),
      () => child.stdin.end(),
      { pause: () => child.stdout.pause(), resume: () => child.stdout.resume() },
    );
    // Pieces of the current line; only each new chunk is searched, so a huge line stays linear.
    let pieces: string[] = [];
    child.stdout.setEncoding("utf8");
    child.stdout.on("data", (chunk: string) => {
      let start = 0;
      for (let newline = chunk.indexOf("\n"); newline >= 0; newline = chunk.indexOf("\n", start)) {
        let line = chunk.slice(start, newline);
        if (pieces.length > 0) {
          pieces.push(line);
          line = pieces.join("");
          pieces = [];
        }
        start = newline + 1;
        if (line.trim()) client.receive(line);
      }
      if (start < chunk.length) pieces.push(chunk.slice(start));
    });
    child.stdout.on("close", () => client.closedResolve());
    return client;
  }

  static async overWebSocket(url: string, options: { headers?: Record<string, string> } = {}): Promise<TestClient> {
    const socket = new WebSocket(url, { headers: options.headers ?? {} });
    await new Promise<void>((resolve, reject) => {
      socket.once("open", () => resolve());
      socket.once("error", reject);
      socket.once("unexpected-response", (_req, res) => reject(new Error(`HTTP ${res.statusCode}`)));
    });
    const client = new TestClient(
      (text) => socket.send(text),
      () => socket.close(),
      // ws keeps its TCP socket private; pausing it stops reading the way a stalled peer does.
      {
        pause: () => (socket as unknown as { _socket: import("node:net").Socket })._socket.pause(),
        resume: () => (socket as unknown as { _socket: import("node:net").Socket })._socket.resume(),
      },
    );
    socket.on("message", (data) => client.receive(data.toString()));
    socket.on("close", () => client.closedResolve());
    return client;
  }

  private receive(text: string): void {
    const message = JSON.parse(text) as Message | Message[];
    for (const m of Array.isArray(message) ? message : [message]) {
      if (this.keep) this.received.push(m);
      this.onMessage?.(m);
      const responseWaiter = m.method === undefined && m.id !== undefined && m.id !== null ? this.responseWaiters.get(m.id) : undefined;
      if (responseWaiter) {
        this.responseWaiters.delete(m.id!);
        responseWaiter(m);
      }
      if (m.method && m.id !== undefined && m.id !== null) void this.answer(m);
      if (this.waiters.length > 0)
        this.waiters = this.waiters.filter((w) => {
          if (!w.match(m)) return true;
          w.resolve(m);
          return false;
        });
    }
  }

  private async answer(request: Message): Promise<void> {
    const handler = this.handlers.get(request.method!);
    if (!handler) return; // unanswered on purpose: tests of disconnects and timeouts rely on it
    const result = await handler(request.params);
    this.send({ id: request.id, result });
  }

  /** Answers server -> client requests of this method. */
  handle(method: string, handler: ServerRequestHandler): void {
    this.handlers.set(method, handler);
  }

  sendRaw(text: string): void {
    this.write(text);
  }

  send(message: Record<string, unknown>): void {
    this.write(JSON.stringify(this.omitJsonrpc ? message : { jsonrpc: "2.0", ...message }));
  }

  /** Sends a request and resolves with the whole response message (result or error). */
  async request(method: string, params: unknown = {}, id: string | number = this.nextId++): Promise<Message> {
    this.sentRequests.set(id, method);
    const response = this.waitForResponse(id);
    this.send({ id, method, params });
    return response;
  }

  /** Sends a request and resolves with its result, throwing on an error response. */
  async call(method: string, params: unknown = {}): Promise<NonNullable<Message["result"]>> {
    const response = await this.request(method, params);
    if (response.error) throw new Error(`${method} failed: ${response.error.code} ${response.error.message}`);
    return response.result!;
  }

  notify(method: string, params: unknown = {}): void {
    this.send({ method, params });
  }

  async initialize(capabilities: Record<string, unknown> = FULL_CAPABILITIES): Promise<Message["result"]> {
    const result = await this.call("initialize", { clientInfo: { name: "test", version: "0" }, capabilities });
    this.notify("initialized");
    return result;
  }

  /** Resolves with the first message (already received or future) that matches. */
  waitFor(match: (m: Message) => boolean, timeoutMs = DEFAULT_TIMEOUT_MS): Promise<Message> {
    const seen = this.received.find(match);
    if (seen) return Promise.resolve(seen);
    return this.waitForNext(match, timeoutMs);
  }

  /** Resolves with the next message from now on that matches. */
  waitForNext(match: (m: Message) => boolean, timeoutMs = DEFAULT_TIMEOUT_MS): Promise<Message> {
    return this.waitWithTimeout(timeoutMs, (resolve) => {
      this.waiters.push({ match, resolve });
      return () => (this.waiters = this.waiters.filter((w) => w.resolve !== resolve));
    });
  }

  /** Resolves with the response to request `id`. */
  private waitForResponse(id: string | number): Promise<Message> {
    return this.waitWithTimeout(DEFAULT_TIMEOUT_MS, (resolve) => {
      this.responseWaiters.set(id, resolve);
      return () => this.responseWaiters.delete(id);
    });
  }

  /** `wait` registers its resolver and returns how to unregister it, which a timeout does. */
  private waitWithTimeout(timeoutMs: number, wait: (resolve: (m: Message) => void) => () => void): Promise<Message> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        forget();
        reject(
          new Error(
            `timed out waiting for a message; last received:\n${this.received
              .slice(-5)
              .map((m) => JSON.stringify(m))
              .join("\n")}`,
          ),
        );
      }, timeoutMs);
      const forget = wait((m) => {
        clearTimeout(timer);
        resolve(m);
      });
    });
  }

  /** Waits for a notification by method (and optional params predicate). */
  notification(
    method: string,
    match: (params: NonNullable<Message["params"]>) => boolean = () => true,
    timeoutMs?: number,
  ): Promise<NonNullable<Message["params"]>> {
    return this.waitFor((m) => m.method === method && m.id === undefined && match(m.params ?? {}), timeoutMs).then((m) => m.params ?? {});
  }

  notifications(method: string): Array<NonNullable<Message["params"]>> {
    return this.received.filter((m) => m.method === method && m.id === undefined).map((m) => m.params ?? {});
  }

  /** Waits until the turn on this thread reaches a terminal notification and returns it. */
  async turnEnd(threadId: string, turnId?: string, timeoutMs?: number): Promise<Message> {
    return this.waitFor(
      (m) =>
        ["turn/completed", "turn/failed", "turn/cancelled"].includes(m.method ?? "") &&
        m.params?.threadId === threadId &&
        (turnId === undefined || (m.params?.turn as { id?: string } | undefined)?.id === turnId),
      timeoutMs,
    );
  }

  close(): void {
    this.end();
  }

  /** Stops reading the server's output: it piles up in the pipe or socket, then in the server. */
  pause(): void {
    this.flow.pause();
  }

  resume(): void {
    this.flow.resume();
  }
}
