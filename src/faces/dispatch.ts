// What every JSON-RPC face of this family does with a request before its own method table:
// the initialize handshake rule, and runtime errors mapped to the family's error codes.
import type { RequestContext } from "../rpc/connection.js";
import { ErrorCode, RpcError } from "../rpc/errors.js";
import { RuntimeError } from "../domain/errors.js";

const RUNTIME_ERROR_CODES: Record<RuntimeError["code"], number> = {
  threadNotFound: ErrorCode.ThreadNotFound,
  threadNotActive: ErrorCode.ThreadNotActive,
  turnInProgress: ErrorCode.TurnInProgress,
  turnNotFound: ErrorCode.TurnNotFound,
  turnNotRunning: ErrorCode.TurnNotRunning,
  invalidInput: ErrorCode.InvalidParams,
  replayGap: ErrorCode.InvalidRequest,
};

/** The answer to any request but initialize on a connection that has not initialized. */
export function notInitialized(): RpcError {
  return new RpcError(ErrorCode.NotInitialized, "Not initialized: the first request must be initialize.");
}

type Dispatch = (method: string, params: unknown, ctx: RequestContext) => Promise<unknown>;

/** Runs `dispatch` once the connection is initialized; `initialize` itself only once. */
export async function dispatchInitialized(
  dispatch: Dispatch,
  initialized: boolean,
  method: string,
  params: unknown,
  ctx: RequestContext,
): Promise<unknown> {
  if (method === "initialize" && initialized) throw new RpcError(ErrorCode.AlreadyInitialized, "Already initialized");
  if (method !== "initialize" && !initialized) throw notInitialized();
  try {
    return await dispatch(method, params, ctx);
  } catch (error) {
    if (error instanceof RuntimeError) throw new RpcError(RUNTIME_ERROR_CODES[error.code], error.message, error.data);
    throw error;
  }
}
