// Shared set-up for end-to-end tests that speak through the typed client (switchyard/client):
// a scripted fake model server, a workspace, and a server spawned over stdio by a connected
// SwitchyardClient. Every notification and approval request the client receives is recorded as
// it arrives, so a test can look back at what came before a turn ended. Tests that need raw
// bytes use harness.ts and its TestClient instead.
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import {
  SwitchyardClient,
  type AppServerNotificationMethod,
  type ApprovalDecision,
  type ApprovalHandler,
  type ApprovalRequest,
  type ClientCapabilities,
  type ClientEventMap,
  type RequestParams,
  type TurnEnd,
  type WireItem,
} from "../../src/client/index.js";
import { FakeModelServer, type ScriptStep } from "./fake-model-server.js";
import { makeWorkspace, modelEnv, threadStartParams } from "./harness.js";
import { CHILD_ENV_CHANGES, tempDir } from "./server-process.js";
import { testStoreEnv } from "./postgres.js";
import { eventually } from "./agentcraft.js";

/** The fake's routes that take a scripted step (anything else, e.g. GET /v1/models, takes none). */
const MODEL_ROUTES = new Set(["/v1/chat/completions", "/v1/responses", "/v1/messages"]);

function modelCalls(fake: FakeModelServer): number {
  return fake.requests.filter((r) => r.method === "POST" && MODEL_ROUTES.has(r.path)).length;
}

/**
 * A fake model server's script, counted: each model call takes one step, so after a test the
 * number of calls must equal the number of steps it enqueued, or a step is left over for the
 * next test (or the model was called more often than scripted).
 */
export class ModelScript {
  private steps = 0;
  private calls: number;

  constructor(readonly fake: FakeModelServer) {
    this.calls = modelCalls(fake);
  }

  static async start(): Promise<ModelScript> {
    return new ModelScript(await FakeModelServer.start());
  }

  enqueue(...steps: ScriptStep[]): void {
    this.fake.enqueue(...steps);
    this.steps += steps.length;
  }

  /** Asserts the model was called once per step enqueued since the last check, then counts afresh. */
  assertConsumed(): void {
    const calls = modelCalls(this.fake) - this.calls;
    const steps = this.steps;
    this.calls += calls;
    this.steps = 0;
    assert.equal(calls, steps, `the model was called ${calls} time(s) for ${steps} scripted step(s)`);
  }
}

export interface PendingApproval {
  request: ApprovalRequest;
  answer(decision: ApprovalDecision): void;
}

/**
 * An approval handler the test answers by hand, when it chooses (or never, to let the server
 * time out): each request waits until `answer` is called.
 */
export class ManualApprovals {
  private readonly queue: PendingApproval[] = [];
  private readonly waiters: Array<(pending: PendingApproval) => void> = [];

  readonly handler: ApprovalHandler = (request) =>
    new Promise<ApprovalDecision>((answer) => {
      const pending = { request, answer };
      const waiter = this.waiters.shift();
      if (waiter) waiter(pending);
      else this.queue.push(pending);
    });

  /** The next request not yet taken, already asked or still to come. */
  next(timeoutMs = 10_000): Promise<PendingApproval> {
    const queued = this.queue.shift();
    if (queued) return Promise.resolve(queued);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiters.splice(this.waiters.indexOf(take), 1);
        reject(new Error(`no approval request within ${timeoutMs} ms`));
      }, timeoutMs);
      const take = (pending: PendingApproval): void => {
        clearTimeout(timer);
        resolve(pending);
      };
      this.waiters.push(take);
    });
  }
}

type Notification = { [M in AppServerNotificationMethod]: { method: M; params: ClientEventMap[M] } }[AppServerNotificationMethod];
export type ItemOf<T extends WireItem["type"]> = Extract<WireItem, { type: T }>;

/**
 * The items of one type. Only `type` narrows: WireItem's `payload` is the union of every item
 * type's payload (each with an index signature), so payload fields read as `unknown`.
 */
export function itemsOf<T extends WireItem["type"]>(items: readonly WireItem[], type: T): Array<ItemOf<T>> {
  return items.filter((i): i is ItemOf<T> => i.type === type);
}

export interface TypedHarnessOptions {
  /** A script (and its fake) shared with other harnesses, e.g. across a restart; default: one of its own. */
  model?: ModelScript;
  /** Default: a new temporary directory. Pass an earlier harness's to restart "the same" server. */
  dataDir?: string;
  /** Extra arguments after `app-server --data-dir DIR`. */
  args?: string[];
  env?: Record<string, string | undefined>;
  files?: Record<string, string>;
  /** Merged over the client's defaults (approvalSupport: true here, since a recording handler is always installed). */
  capabilities?: ClientCapabilities;
  /** Answers approval requests (each is recorded first). Default: fail the request, for tests that expect none. */
  onApproval?: ApprovalHandler;
}

export interface TypedHarness {
  model: ModelScript;
  fake: FakeModelServer;
  client: SwitchyardClient;
  workspace: string;
  dataDir: string;
  /** Every approval request the server sent this client, in order. */
  approvals: ApprovalRequest[];
  /** The params of every such notification received so far, in order; with threadId, that thread's only. */
  notifications<M extends AppServerNotificationMethod>(method: M, threadId?: string): Array<ClientEventMap[M]>;
  /** The first matching notification, already received or still to come. */
  notification<M extends AppServerNotificationMethod>(
    method: M,
    predicate?: (params: ClientEventMap[M]) => boolean,
    timeoutMs?: number,
  ): Promise<ClientEventMap[M]>;
  /** The items of the thread's item/completed notifications so far, in order. */
  completedItems(threadId: string): WireItem[];
  /** Starts a thread in the workspace (threadStartParams plus `params`) and returns its id. */
  startThread(params?: Partial<RequestParams<"thread/start">>): Promise<string>;
  /** Starts a turn with a text input and returns its id. */
  startTurn(threadId: string, text: string): Promise<string>;
  /** Starts a turn and resolves with its end (completed, failed or cancelled). */
  runTurn(threadId: string, text: string): Promise<TurnEnd>;
  /** SIGKILLs the server (no clean-up at all) and resolves once it has exited and the client has closed. */
  crashServer(): Promise<void>;
  /** What the server has logged on stderr so far. */
  serverLog(): string;
  /** The WebSocket URL the server logged once it listened (started with `--listen ws://…`). */
  websocketUrl(): Promise<string>;
  /** Closes the client, which stops the server gracefully (SIGTERM), and the fake if it is the harness's own. */
  close(): Promise<void>;
}

const REQUEST_TIMEOUT_MS = 10_000;

/** A server over stdio, spawned by a connected SwitchyardClient (which does not reconnect: a crash closes it). */
export async function startTypedHarness(opts: TypedHarnessOptions = {}): Promise<TypedHarness> {
  const model = opts.model ?? (await ModelScript.start());
  const fake = model.fake;
  const workspace = makeWorkspace(opts.files);
  const dataDir = opts.dataDir ?? tempDir("data");
  const approvals: ApprovalRequest[] = [];
  const answer: ApprovalHandler =
    opts.onApproval ??
    (() => {
      throw new Error("this test expects no approval request");
    });
  let log = "";
  let client: SwitchyardClient;
  try {
    client = await SwitchyardClient.connect(
      {
        transport: "stdio",
        args: ["--data-dir", dataDir, ...(opts.args ?? [])],
        // As ServerProcess.spawn (the client applies these changes to this process's environment).
        env: { ...CHILD_ENV_CHANGES, ...testStoreEnv(dataDir), ...modelEnv(fake), ...opts.env },
        cwd: dataDir,
        stderr: (text) => (log += text),
      },
      {
        clientInfo: { name: "test", version: "0" },
        reconnect: false,
        requestTimeoutMs: REQUEST_TIMEOUT_MS,
        ...(opts.capabilities ? { capabilities: opts.capabilities } : {}),
        onApproval: (request) => {
          approvals.push(request);
          return answer(request);
        },
      },
    );
  } catch (error) {
    if (!opts.model) await fake.close();
    throw new Error(`could not connect to the server: ${String(error)}\n${log}`, { cause: error });
  }

  // Recorded synchronously, as each message is read (an events() loop could lag behind).
  const received: Notification[] = [];
  client.onEvent((event) => {
    if (event.method !== "gap") received.push(event as Notification);
  });

  const notifications = <M extends AppServerNotificationMethod>(method: M, threadId?: string): Array<ClientEventMap[M]> =>
    received
      .filter((n) => n.method === method && (threadId === undefined || ("threadId" in n.params && n.params.threadId === threadId)))
      .map((n) => n.params as ClientEventMap[M]);

  const startTurn = async (threadId: string, text: string): Promise<string> => (await client.startTurn(threadId, text)).turn.id;

  return {
    model,
    fake,
    client,
    workspace,
    dataDir,
    approvals,
    notifications,
    notification(method, predicate = () => true, timeoutMs = REQUEST_TIMEOUT_MS) {
      // Looking back and starting to wait happen in the same tick, so nothing falls in between.
      const seen = notifications(method).find(predicate);
      return seen ? Promise.resolve(seen) : client.waitFor(method, predicate, timeoutMs);
    },
    completedItems: (threadId) => notifications("item/completed", threadId).map((p) => p.item),
    async startThread(params = {}) {
      const { thread } = await client.startThread(threadStartParams(workspace, params) as RequestParams<"thread/start">);
      return thread.id;
    },
    startTurn,
    async runTurn(threadId, text) {
      return client.turnEnd(await startTurn(threadId, text));
    },
    async crashServer() {
      // The client does not expose the process it spawned; the data directory's lock names it.
      const { pid } = JSON.parse(fs.readFileSync(path.join(dataDir, "switchyard.lock"), "utf8")) as { pid: number };
      assert.ok(pid !== process.pid, "the lock names the spawned server");
      const closed = client.waitFor("closed", () => true);
      process.kill(pid, "SIGKILL");
      await closed; // the client (reconnect: false) closes once the process has exited
    },
    serverLog: () => log,
    websocketUrl: () => eventually(async () => /"url":"(ws:[^"]+)","msg":"listening"/.exec(log)?.[1], "the server's WebSocket URL"),
    async close() {
      await client.close();
      if (!opts.model) await fake.close();
    },
  };
}
