// Picks each connection's face: forced by configuration, or from the shape of the params of
// its first `initialize` request. Until then every other request is refused as not initialized.
import type { RequestContext, RpcHandlers } from "../rpc/connection.js";
import type { RpcError } from "../rpc/errors.js";
import type { Face, FaceContext } from "./face.js";

export class FaceRouter implements RpcHandlers {
  private handlers: RpcHandlers | undefined;

  /**
   * `faces[0]` is the default when no face claims an initialize request, and its
   * `notInitialized` answers requests that come before any initialize.
   */
  constructor(
    private readonly faces: readonly Face[],
    private readonly ctx: FaceContext,
    private readonly notInitialized: () => RpcError,
    forced?: Face,
  ) {
    if (forced) this.handlers = this.open(forced);
  }

  onRequest(method: string, params: unknown, ctx: RequestContext): unknown {
    if (!this.handlers) {
      if (method !== "initialize") throw this.notInitialized();
      const face = this.faces.find((f) => f.claims?.(params)) ?? this.faces[0]!;
      this.ctx.log.debug({ face: face.name, connection: this.ctx.connection.id }, "face chosen");
      this.handlers = this.open(face);
    }
    return this.handlers.onRequest(method, params, ctx);
  }

  private open(face: Face): RpcHandlers {
    if (!face.open) throw new Error(`The ${face.name} face does not serve JSON-RPC connections.`);
    // Before the face's code loads, so no answer of the engine uses the other codes.
    if (face.engineErrorCodes) this.ctx.connection.useErrorCodes(face.engineErrorCodes);
    return face.open(this.ctx);
  }

  onNotification(method: string, params: unknown, ctx: RequestContext): void {
    this.handlers?.onNotification?.(method, params, ctx);
  }
}
