// Dispatch by protocol table: the table's params schema validates each request before its
// handler runs, so handlers see typed, checked params (invalid ones get -32602 with the issues).
import type { z } from "zod";
import type { RequestContext } from "./connection.js";
import { ErrorCode, RpcError } from "./errors.js";
import type { RequestHandlers, RequestSpec } from "./protocol-table.js";

export type Dispatch = (method: string, params: unknown, ctx: RequestContext) => Promise<unknown>;

/**
 * `toProtocolError` turns what a handler throws into the face's own error (its codes); the
 * engine answers an RpcError as is, and anything else as -32603.
 */
export function dispatchRequests<R extends Record<string, RequestSpec>>(
  requests: R,
  handlers: RequestHandlers<R>,
  toProtocolError: (error: unknown) => unknown = (error) => error,
): Dispatch {
  const dispatch: Dispatch = async (name, params, ctx) => {
    // Own properties only, so "toString" or "__proto__" are not methods.
    const spec = Object.hasOwn(requests, name) ? requests[name] : undefined;
    const handler = Object.hasOwn(handlers, name) ? handlers[name] : undefined;
    if (!spec || !handler) throw new RpcError(ErrorCode.MethodNotFound, `Method not found: ${name}`);
    const parsed = spec.params.safeParse(params === undefined ? {} : params);
    if (!parsed.success) {
      const issues = parsed.error.issues;
      const first = issues[0];
      const where = first && first.path.length > 0 ? `${first.path.map(String).join(".")}: ` : "";
      throw new RpcError(ErrorCode.InvalidParams, `Invalid params: ${where}${first?.message ?? "invalid"}`, { issues });
    }
    return handler(parsed.data as z.output<R[string]["params"]>, ctx);
  };
  return async (name, params, ctx) => {
    try {
      return await dispatch(name, params, ctx);
    } catch (error) {
      throw toProtocolError(error);
    }
  };
}
