// claude-app-server protocol: its error codes (-32000..-32004 are the protocol's own, not the
// AppServer's) and runtime errors mapped to them.
import { RuntimeError } from "../../domain/errors.js";
import { ErrorCode, RpcError } from "../../rpc/errors.js";

export const ClaudeErrorCode = {
  // JSON-RPC 2.0's own.
  ParseError: ErrorCode.ParseError,
  InvalidRequest: ErrorCode.InvalidRequest,
  MethodNotFound: ErrorCode.MethodNotFound,
  InvalidParams: ErrorCode.InvalidParams,
  InternalError: ErrorCode.InternalError,
  // The original's.
  NotInitialized: -32000,
  ThreadNotFound: -32001,
  TurnBusy: -32003,
  NoActiveTurn: -32004,
  // Switchyard's, where the original has none: past its range, so no original code changes meaning.
  Overloaded: -32005,
  ThreadNotActive: -32006,
  StorageUnavailable: -32007,
  NotOwner: -32008,
} as const;

const RUNTIME_ERROR_CODES: Record<RuntimeError["code"], number> = {
  threadNotFound: ClaudeErrorCode.ThreadNotFound,
  // A thread an AppServer client paused or archived.
  threadNotActive: ClaudeErrorCode.ThreadNotActive,
  turnInProgress: ClaudeErrorCode.TurnBusy,
  // thread/fork's at_turn_id names no turn of the thread: a bad parameter.
  turnNotFound: ClaudeErrorCode.InvalidParams,
  turnNotRunning: ClaudeErrorCode.NoActiveTurn,
  invalidInput: ClaudeErrorCode.InvalidParams,
  replayGap: ClaudeErrorCode.InvalidRequest,
  storageUnavailable: ClaudeErrorCode.StorageUnavailable,
  notOwner: ClaudeErrorCode.NotOwner,
  // A skill or command the request names does not exist: a bad parameter.
  skillNotFound: ClaudeErrorCode.InvalidParams,
  commandNotFound: ClaudeErrorCode.InvalidParams,
  mcpServerNotFound: ClaudeErrorCode.InvalidParams,
  mcpValidationFailed: ClaudeErrorCode.InvalidParams,
  mcpServerNameConflict: ClaudeErrorCode.InvalidParams,
  cronJobNotFound: ClaudeErrorCode.InvalidParams,
  subagentNotFound: ClaudeErrorCode.InvalidParams,
  subagentValidationFailed: ClaudeErrorCode.InvalidParams,
  subagentProtected: ClaudeErrorCode.InvalidParams,
  channelNotFound: ClaudeErrorCode.InvalidParams,
  channelValidationFailed: ClaudeErrorCode.InvalidParams,
  channelNameConflict: ClaudeErrorCode.InvalidParams,
  pluginNotFound: ClaudeErrorCode.InvalidParams,
};

/** A runtime error as this face's RpcError; any other error unchanged. */
export function claudeError(error: unknown): unknown {
  return error instanceof RuntimeError ? new RpcError(RUNTIME_ERROR_CODES[error.code], error.message, error.data) : error;
}

export function notInitialized(): RpcError {
  return new RpcError(ClaudeErrorCode.NotInitialized, "Not initialized. Send initialize first.");
}
