// A face is one client protocol over the shared runtime: its schemas, its method table, and
// the mapping between its wire messages and runtime calls/events.
import type { Logger } from "../log.js";
import type { EngineErrorCodes, RpcConnection, RpcHandlers } from "../rpc/connection.js";
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
  /** The codes the RPC engine answers with on this face's connections, where they differ from its defaults. */
  readonly engineErrorCodes?: Partial<EngineErrorCodes>;
}

/**
 * A face whose code (schemas, session) loads only when a connection chooses it, keeping
 * start-up free of dialects nobody uses. Requests and notifications wait for the load, in order.
 */
export function lazyFace(
  name: string,
  claims: Face["claims"],
  load: () => Promise<(ctx: FaceContext) => RpcHandlers>,
  engineErrorCodes?: Partial<EngineErrorCodes>,
): Face {
  return {
    name,
    claims,
    ...(engineErrorCodes ? { engineErrorCodes } : {}),
    open(ctx) {
      const handlers = load().then((open) => open(ctx));
      return {
        onRequest: async (method, params, requestCtx) => (await handlers).onRequest(method, params, requestCtx),
        onNotification: (method, params, requestCtx) =>
          void handlers
            .then((h) => h.onNotification?.(method, params, requestCtx))
            .catch((error: unknown) => ctx.log.error({ err: error, face: name, method }, "notification handler failed")),
      };
    },
  };
}
