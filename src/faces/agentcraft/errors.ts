// AgentCraft's error codes (spec 003 §2): business failures carry -32000..-32011 with
// `error.data = {errorCode, context}`; anything unmapped is -32603 (and logged by the engine).
import { RuntimeError } from "../../domain/errors.js";
import { RpcError } from "../../rpc/errors.js";

export const AGENTCRAFT_CODES = {
  GENERIC_BUSINESS: -32000,
  TEMPLATE_NOT_FOUND: -32001,
  CONFIG_VALIDATION: -32002,
  AGENT_NOT_FOUND: -32003,
  AGENT_ALREADY_RUNNING: -32004,
  WORKSPACE_INIT: -32005,
  COMPONENT_REFERENCE: -32006,
  INSTANCE_CORRUPTED: -32007,
  AGENT_LAUNCH: -32008,
  AGENT_ALREADY_ATTACHED: -32009,
  AGENT_NOT_ATTACHED: -32010,
  PROXY_SESSION_CONFLICT: -32011,
  /** Switchyard's, past the document's range: the connection has too many requests in flight. */
  OVERLOADED: -32012,
} as const;

export type AgentCraftErrorCode = keyof typeof AGENTCRAFT_CODES | "CONFIG_NOT_FOUND";

/** A business failure; becomes its RPC error at the face's edge. */
export class AgentCraftError extends Error {
  constructor(
    readonly errorCode: AgentCraftErrorCode,
    message: string,
    readonly context: Record<string, unknown> = {},
  ) {
    super(message);
    this.name = "AgentCraftError";
  }
}

export function toRpcError(error: unknown): unknown {
  if (error instanceof AgentCraftError) {
    // CONFIG_NOT_FOUND (a missing skill, prompt, ...) is a generic business error (§3.5).
    const code = error.errorCode === "CONFIG_NOT_FOUND" ? AGENTCRAFT_CODES.GENERIC_BUSINESS : AGENTCRAFT_CODES[error.errorCode];
    return new RpcError(code, error.message, { errorCode: error.errorCode, context: error.context });
  }
  if (error instanceof RuntimeError) {
    return new RpcError(AGENTCRAFT_CODES.GENERIC_BUSINESS, error.message, {
      errorCode: "GENERIC_BUSINESS",
      context: { runtime: error.code },
    });
  }
  return error;
}

export const notFound = (name: string): AgentCraftError =>
  new AgentCraftError("AGENT_NOT_FOUND", `Agent "${name}" does not exist.`, { name });
