// AgentCompany protocol v1 error codes: JSON-RPC's own, and -32000 for every application error
// with a machine-readable `data.code` (WORKSPACE_NOT_FOUND, POLICY_DENIED, SECRET_DETECTED, ...).
import { RuntimeError } from "../../domain/errors.js";
import { RpcError } from "../../rpc/errors.js";

export const APPLICATION_ERROR = -32000;

export type AppErrorCode =
  | "WORKSPACE_NOT_FOUND"
  | "WORKSPACE_EXISTS"
  | "WORKSPACE_INVALID"
  | "WORKSPACE_LOCKED"
  | "PROJECT_NOT_FOUND"
  | "AGENT_NOT_FOUND"
  | "RUN_NOT_FOUND"
  | "SUBSCRIPTION_NOT_FOUND"
  | "SESSION_NOT_FOUND"
  | "SESSION_RUNNING"
  | "ADAPTER_UNAVAILABLE"
  | "POLICY_DENIED"
  | "SECRET_DETECTED"
  | "ARTIFACT_NOT_FOUND"
  | "TASK_NOT_FOUND"
  | "PATCH_CONFLICT"
  | "EVIDENCE_MISSING"
  | "RUNTIME_ERROR";

export class AppError extends Error {
  constructor(
    readonly code: AppErrorCode,
    message: string,
    readonly details: Record<string, unknown> = {},
  ) {
    super(message);
    this.name = "AppError";
  }
}

export function toRpcError(error: unknown): unknown {
  if (error instanceof AppError) return new RpcError(APPLICATION_ERROR, error.message, { code: error.code, ...error.details });
  if (error instanceof RuntimeError) return new RpcError(APPLICATION_ERROR, error.message, { code: "RUNTIME_ERROR", runtime: error.code });
  return error;
}
