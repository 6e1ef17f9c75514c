// The common shape of a face's protocol table: every client request (params and result), every
// notification, every server -> client request, and the named objects they carry. Each face
// exports one (appServerProtocol, claudeProtocol); `switchyard schema` turns them into JSON
// Schema, TypeScript declarations and the reference pages under docs/reference/.
import type { z } from "zod";

/** One JSON-RPC request: what the caller sends and what it gets back. */
export interface RequestSpec {
  params: z.ZodType;
  result: z.ZodType;
  /** One line, shown in the generated docs and declarations. */
  description?: string;
}

export interface FaceProtocol {
  /** The face's name (Face.name); also the directory and file names of its exported schema. */
  name: string;
  /** Human name of the protocol, used as the reference page's title. */
  title?: string;
  /** Where the table is declared, for the "generated from" notes. */
  source?: string;
  /** Client -> server requests. */
  requests: Record<string, RequestSpec>;
  /** Server -> client notifications; describe each schema with `.describe()` (one line). */
  notifications: Record<string, z.ZodType>;
  /** Server -> client requests. */
  serverRequests: Record<string, RequestSpec>;
  /** Named objects: exported once under this name and referenced wherever they occur. */
  objects: Record<string, z.ZodType>;
}
