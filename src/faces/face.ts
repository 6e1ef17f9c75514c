// A face is one client protocol over the shared runtime: its schemas, its method table, and
// the mapping between its wire messages and runtime calls/events.
import type { Logger } from "../log.js";
import type { RpcConnection, RpcHandlers } from "../rpc/connection.js";
import type { Runtime } from "../runtime/runtime.js";

export interface FaceContext {
  runtime: Runtime;
  connection: RpcConnection;
  log: Logger;
  serverVersion: string;
}

export interface Face {
  readonly name: string;
  /** Whether the params of an `initialize` request are written in this face's dialect. */
  claims(initializeParams: unknown): boolean;
  /** Starts serving one connection. */
  open(ctx: FaceContext): RpcHandlers;
}
