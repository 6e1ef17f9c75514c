// Picks each connection's face: forced by configuration, or from the shape of the params of
// its first `initialize` request. Until then every other request is refused as not initialized.
import type { RequestContext, RpcConnection, RpcHandlers } from "../rpc/connection.js";
import type { RpcError } from "../rpc/errors.js";
import type { Logger } from "../log.js";
import type { RuntimeApi } from "../runtime/api.js";
import type { EarlyFacts, Face } from "./face.js";

export interface FaceRouterOptions {
  /** The faces that may claim a connection, in the order they are asked. */
  faces: readonly Face[];
  /** The face of a connection whose initialize no face claims. */
  fallback: Face;
  connection: RpcConnection;
  log: Logger;
  serverVersion: string;
  /**
   * Pending for a connection opened while the server starts (stdio): its initialize is answered
   * early when the face can (Face.answerEarly, from `early`), everything else waits for the
   * runtime, in order.
   */
  runtime: RuntimeApi | Promise<RuntimeApi>;
  early?: EarlyFacts;
  /** Told of each early answer still being made, so the runtime side can load after it. */
  answeringEarly?: (answered: Promise<unknown>) => void;
  /** The answer to requests that come before any initialize. */
  notInitialized: () => RpcError;
  forced?: Face | undefined;
}

export class FaceRouter implements RpcHandlers {
  private handlers: RpcHandlers | Promise<RpcHandlers> | undefined;
  /** The forced face's Face.serveEarly, until a request has had to wait for the runtime. */
  private serveEarly: Face["serveEarly"];
  /** The requests served early, still being answered: a request that waits for the runtime comes after them. */
  private servedEarly: Array<Promise<unknown>> = [];

  constructor(private readonly options: FaceRouterOptions) {
    const { forced, runtime } = options;
    if (!forced) return;
    if (runtime instanceof Promise && forced.serveEarly) {
      this.serveEarly = forced.serveEarly;
      // The face's code loads with the runtime, after what is served early.
      this.use(this.open(forced, runtime));
    } else this.use(this.open(forced));
  }

  onRequest(method: string, params: unknown, ctx: RequestContext): unknown {
    if (this.serveEarly) {
      const served = this.handlers instanceof Promise ? this.serveEarly(method, params, ctx) : undefined;
      if (served !== undefined) {
        const answered = Promise.resolve(served).catch(() => undefined);
        this.servedEarly.push(answered);
        this.options.answeringEarly?.(answered);
        return served;
      }
      this.serveEarly = undefined;
      if (this.servedEarly.length > 0) this.use(Promise.all([this.handlers!, ...this.servedEarly]).then(([handlers]) => handlers));
      this.servedEarly = [];
    }
    if (!this.handlers) {
      const { faces, log, connection, early: facts } = this.options;
      if (method !== "initialize") throw this.options.notInitialized();
      const peer = { omitsJsonrpc: connection.omitsJsonrpc };
      const face = faces.find((f) => f.claims?.(params, peer)) ?? this.options.fallback;
      log.debug({ face: face.name, connection: connection.id }, "face chosen");
      const early = this.options.runtime instanceof Promise && facts ? face.answerEarly?.(params, facts) : undefined;
      // An answer still being made goes out before the face's code loads: compiling it stops
      // the event loop.
      const making = early instanceof Promise ? early.catch(() => undefined) : undefined;
      if (making) this.options.answeringEarly?.(making);
      const opened = this.open(face, making);
      if (early !== undefined) {
        // The face's handlers still see the initialize (their state depends on it), once the
        // client has its answer, and before any request that came after it.
        const answered = making ?? early;
        this.use(
          Promise.all([opened, answered]).then(([handlers]) => {
            void Promise.resolve()
              .then(() => handlers.onRequest(method, params, ctx))
              .catch((error: unknown) => log.error({ err: error, face: face.name }, "initialize failed after its early answer"));
            return handlers;
          }),
        );
        return early;
      }
      this.use(opened);
    }
    const handlers = this.handlers!;
    return handlers instanceof Promise ? handlers.then((h) => h.onRequest(method, params, ctx)) : handlers.onRequest(method, params, ctx);
  }

  onNotification(method: string, params: unknown, ctx: RequestContext): void {
    const handlers = this.handlers;
    if (handlers instanceof Promise) void handlers.then((h) => h.onNotification?.(method, params, ctx));
    else handlers?.onNotification?.(method, params, ctx);
  }

  /** Requests wait for pending handlers in order; once they are there, they go straight to them. */
  private use(handlers: RpcHandlers | Promise<RpcHandlers>): void {
    this.handlers = handlers;
    if (handlers instanceof Promise) void handlers.then((ready) => (this.handlers = ready)).catch(() => undefined);
  }

  /** `after`: an early answer that must be out before the face's code starts loading. */
  private open(face: Face, after?: Promise<unknown>): RpcHandlers | Promise<RpcHandlers> {
    const { connection, log, serverVersion, runtime } = this.options;
    const open = face.open;
    if (!open) throw new Error(`The ${face.name} face does not serve JSON-RPC connections.`);
    // Before the face's code loads, so no answer of the engine uses the other codes.
    if (face.engineErrorCodes) connection.useErrorCodes(face.engineErrorCodes);
    if (!(runtime instanceof Promise)) return open({ runtime, connection, log, serverVersion });
    if (after) void after.then(() => face.preload?.());
    else face.preload?.();
    return runtime.then((ready) => open({ runtime: ready, connection, log, serverVersion }));
  }
}
