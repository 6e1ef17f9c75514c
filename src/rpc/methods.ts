// Typed method tables: each method declares a zod schema for its params, and the dispatcher
// validates before calling the handler, so handlers see typed, checked params.
import type { z } from "zod";
import type { RequestContext } from "./connection.js";
import { ErrorCode, RpcError } from "./errors.js";

export interface MethodDef<S extends z.ZodType, R> {
  params: S;
  handler(params: z.infer<S>, ctx: RequestContext): R | Promise<R>;
}

export function method<S extends z.ZodType, R>(params: S, handler: MethodDef<S, R>["handler"]): MethodDef<S, R> {
  return { params, handler };
}

export type MethodTable = Record<string, MethodDef<z.ZodType, unknown>>;

export function dispatchTable(table: MethodTable): (method: string, params: unknown, ctx: RequestContext) => Promise<unknown> {
  return async (name, params, ctx) => {
    // Own properties only, so "toString" or "__proto__" are not methods.
    const def = Object.hasOwn(table, name) ? table[name] : undefined;
    if (!def) throw new RpcError(ErrorCode.MethodNotFound, `Method not found: ${name}`);
    const parsed = def.params.safeParse(params === undefined ? {} : params);
    if (!parsed.success) {
      const issues = parsed.error.issues;
      const first = issues[0];
      const where = first && first.path.length > 0 ? `${first.path.map(String).join(".")}: ` : "";
      throw new RpcError(ErrorCode.InvalidParams, `Invalid params: ${where}${first?.message ?? "invalid"}`, { issues });
    }
    return def.handler(parsed.data, ctx);
  };
}
