// The common shape of a JSON-RPC protocol table: every client request (params and result), every
// notification, every server -> client request, and the named objects they carry. Each face
// exports one; `switchyard schema` turns them into JSON Schema, TypeScript declarations and the
// reference pages under docs/reference/, and the table is the type of the face's handler map.
import type { z } from "zod";
import type { RequestContext } from "./connection.js";
import type { RawJson } from "./raw-json.js";

/** One JSON-RPC request: what the caller sends and what it gets back. */
export interface RequestSpec {
  params: z.ZodType;
  result: z.ZodType;
  /** One line, shown in the generated docs and declarations. */
  description?: string;
}

export interface ProtocolTable {
  /** The face's name; also the directory and file names of its exported schema. */
  name: string;
  /** Human name of the protocol, used as the reference page's title. */
  title?: string;
  /** Where the table is declared, for the "generated from" notes. */
  source?: string;
  /** Markdown the reference page shows before the tables, e.g. what the face does not serve. */
  notes?: string;
  /** Client -> server requests. */
  requests: Record<string, RequestSpec>;
  /** Server -> client notifications; describe each schema with `.describe()` (one line). */
  notifications: Record<string, z.ZodType>;
  /** Server -> client requests. */
  serverRequests: Record<string, RequestSpec>;
  /** Named objects: exported once under this name and referenced wherever they occur. */
  objects: Record<string, z.ZodType>;
}

/**
 * The handler map a table demands: one handler per request, taking the validated params and
 * returning what the result schema accepts. A missing method, an extra one or a wrong result
 * shape fails `tsc`.
 */
export type RequestHandlers<R extends Record<string, RequestSpec>> = {
  [M in keyof R]: (
    params: z.output<R[M]["params"]>,
    ctx: RequestContext,
  ) => Result<z.input<R[M]["result"]>> | Promise<Result<z.input<R[M]["result"]>>>;
};

/** A result as a value, or pre-serialized (RawJson) for large reads. */
type Result<T> = T | RawJson<T>;
