// The client's public types, all derived from the protocol table (src/faces/appserver/protocol.ts)
// so they cannot drift from what the server speaks.
import type { z } from "zod";
import type { Logger } from "../log.js";
import type {
  AppServerNotificationMethod,
  AppServerServerRequests,
  NotificationParams,
  RequestParams,
  RequestResult,
} from "../faces/appserver/protocol.js";

export type {
  AppServerNotificationMethod,
  AppServerRequestMethod,
  NotificationParams,
  RequestParams,
  RequestResult,
} from "../faces/appserver/protocol.js";
export type { WireItem, WireThread, WireTurn } from "../faces/appserver/protocol.js";
export type { Logger };

/** Spawn a server and talk JSON Lines over its stdin/stdout. */
export interface StdioTarget {
  transport: "stdio";
  /**
   * The program to run. Default: this package's CLI under the current Node (`process.execPath`),
   * run as `node <cli> app-server ...args`. With a command, `args` is its whole argument list
   * (default `["app-server"]`).
   */
  command?: string;
  args?: string[];
  /** Added to this process's environment; an undefined value removes a variable. */
  env?: Record<string, string | undefined>;
  cwd?: string;
  /** Where the server's log (stderr) goes. Default "inherit". */
  stderr?: "inherit" | "ignore" | ((text: string) => void);
}

/** Connect to a server listening on `--listen ws://HOST:PORT`; the URL ends in /ws. */
export interface WebSocketTarget {
  transport: "websocket";
  /**
   * The server, or a cluster's nodes (servers on one PostgreSQL store): the client connects to
   * the first that answers and, when that connection is lost, tries the others first.
   */
  url: string | readonly string[];
  token?: string;
}

export type ConnectTarget = StdioTarget | WebSocketTarget;

export type ClientInfo = RequestParams<"initialize">["clientInfo"];
export type ClientCapabilities = NonNullable<RequestParams<"initialize">["capabilities"]>;
export type ServerInfo = RequestResult<"initialize">["serverInfo"];

export type ApprovalRequest = z.output<(typeof AppServerServerRequests)["item/approval/request"]["params"]>;
export type ApprovalDecision = z.output<(typeof AppServerServerRequests)["item/approval/request"]["result"]>["decision"];
export type ApprovalHandler = (request: ApprovalRequest) => ApprovalDecision | Promise<ApprovalDecision>;

export interface ReconnectOptions {
  /** Delay before the first attempt. Default 250. */
  initialDelayMs?: number;
  /** The delay doubles per attempt up to this. Default 5000. */
  maxDelayMs?: number;
  /** Attempts per outage before the client gives up and closes. Default 10. */
  maxAttempts?: number;
}

export interface ClientOptions {
  /** Default { name: "switchyard-client", version: <package version> }. */
  clientInfo?: ClientInfo;
  /**
   * Merged over the defaults: approvalSupport true iff `onApproval` is given, streamingSupport,
   * commandExecutionStreaming and toolExecutionLifecycle true.
   */
  capabilities?: ClientCapabilities;
  /** Answers `item/approval/request`. Given here because approvalSupport is declared at initialize. */
  onApproval?: ApprovalHandler;
  /** Default timeout of every request, including the wait for a reconnection. Default 60000. */
  requestTimeoutMs?: number;
  /** Default: on, with the defaults of ReconnectOptions. */
  reconnect?: ReconnectOptions | false;
  /**
   * WebSocket: pings the server this often, and takes one that answered nothing since the
   * previous ping as gone (hung, or the network broke), then reconnects. Default 15000; 0: none.
   * An answer still arriving counts as nothing until it is whole: on a link slow enough that a
   * huge `thread/read` takes longer than this, raise it.
   */
  heartbeatMs?: number;
  logger?: Logger;
}

/** A server notification, discriminated by method. */
export type ServerNotification = {
  [M in AppServerNotificationMethod]: { method: M; params: NotificationParams<M> };
}[AppServerNotificationMethod];

/**
 * After a reconnection the server could not replay a followed thread's missed events (the thread
 * is gone, or its log no longer reaches back far enough). The client stops following it; read it
 * with thread/read and subscribe again if it still exists.
 */
export interface GapInfo {
  threadId: string;
  error: Error;
}

/** What `events()` yields: the server's notifications, plus gaps in them. */
export type ClientEvent = ServerNotification | { method: "gap"; params: GapInfo };

/** Everything `on()` and `waitFor()` accept: each notification method, and the client's own events. */
export type ClientEventMap = { [M in AppServerNotificationMethod]: NotificationParams<M> } & {
  gap: GapInfo;
  /** The connection dropped; the client is reconnecting. */
  disconnected: { error: Error };
  /** Connected again: re-initialized and every followed thread re-subscribed. */
  reconnected: { attempt: number };
  /** The client is closed: by close(), or because reconnecting failed (then with `error`). */
  closed: { error?: Error };
};
export type ClientEventName = keyof ClientEventMap;

export type TurnEndMethod = "turn/completed" | "turn/failed" | "turn/cancelled";
export type TurnEnd = Extract<ServerNotification, { method: TurnEndMethod }>;

export type ConnectionState = "connecting" | "connected" | "reconnecting" | "closed";
