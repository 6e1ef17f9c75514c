// ACP face: runtime errors and failed turns as ACP (JSON-RPC) errors.
import { RequestError } from "@agentclientprotocol/sdk";
import { RuntimeError } from "../../domain/errors.js";
import type { TurnError } from "../../domain/model.js";

/**
 * A runtime error as the JSON-RPC error ACP expects: an unknown session is -32002 with
 * `data.sessionId` (as the SDK's sessionNotFound builds it); a request that cannot be served in
 * the session's state is -32602 (invalid params) with the runtime's code in `data.code`.
 */
export function toRequestError(error: unknown): unknown {
  if (error instanceof RequestError || !(error instanceof RuntimeError)) return error;
  switch (error.code) {
    case "threadNotFound":
      return RequestError.sessionNotFound(String(error.data?.threadId ?? ""));
    case "turnNotFound":
      return new RequestError(-32002, error.message, { code: error.code, ...error.data });
    case "invalidInput":
    case "threadNotActive":
    case "turnInProgress":
    case "turnNotRunning":
      return new RequestError(-32602, error.message, { code: error.code, ...error.data });
    case "replayGap":
      return new RequestError(-32603, error.message, { code: error.code, ...error.data });
  }
}

/**
 * A failed turn answers session/prompt with a JSON-RPC error: -32603 with the turn error's
 * message, and its machine-readable code (e.g. "noProvider", "rateLimited") in `data.code`.
 * ACP has no stop reason for a failure.
 */
export function turnFailedError(error: TurnError): RequestError {
  return new RequestError(-32603, error.message, {
    code: error.code,
    ...(error.httpStatus !== undefined ? { httpStatus: error.httpStatus } : {}),
  });
}

/** Runs a handler, turning runtime errors into ACP errors. */
export async function guarded<T>(run: () => T | Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    throw toRequestError(error);
  }
}
