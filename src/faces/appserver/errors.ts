// AppServer protocol: its error codes, the initialize rule, and runtime errors mapped to them.
import type { RequestContext } from "../../rpc/connection.js";
import { ErrorCode, RpcError } from "../../rpc/errors.js";
import type { Dispatch } from "../../rpc/methods.js";
import { RuntimeError } from "../../domain/errors.js";

export const AppServerErrorCode = {
  ...ErrorCode,
  NotInitialized: -32002,
  AlreadyInitialized: -32003,
  ThreadNotFound: -32010,
  ThreadNotActive: -32011,
  TurnInProgress: -32012,
  TurnNotFound: -32013,
  TurnNotRunning: -32014,
  ApprovalTimeout: -32020,
  StorageUnavailable: -32030,
  CronJobNotFound: -32031,
  NotOwner: -32032,
  SkillNotFound: -32040,
  PluginNotFound: -32041,
  CommandNotFound: -32060,
  McpServerNotFound: -32070,
  McpServerValidationFailed: -32072,
  McpServerNameConflict: -32074,
  ExternalChannelNotFound: -32080,
  ExternalChannelValidationFailed: -32081,
  ExternalChannelNameConflict: -32082,
  SubAgentProfileNotFound: -32083,
  SubAgentProfileValidationFailed: -32084,
  SubAgentProfileProtected: -32085,
} as const;

const RUNTIME_ERROR_CODES: Record<RuntimeError["code"], number> = {
  threadNotFound: AppServerErrorCode.ThreadNotFound,
  threadNotActive: AppServerErrorCode.ThreadNotActive,
  turnInProgress: AppServerErrorCode.TurnInProgress,
  turnNotFound: AppServerErrorCode.TurnNotFound,
  turnNotRunning: AppServerErrorCode.TurnNotRunning,
  invalidInput: AppServerErrorCode.InvalidParams,
  replayGap: AppServerErrorCode.InvalidRequest,
  storageUnavailable: AppServerErrorCode.StorageUnavailable,
  notOwner: AppServerErrorCode.NotOwner,
  skillNotFound: AppServerErrorCode.SkillNotFound,
  pluginNotFound: AppServerErrorCode.PluginNotFound,
  commandNotFound: AppServerErrorCode.CommandNotFound,
  mcpServerNotFound: AppServerErrorCode.McpServerNotFound,
  mcpValidationFailed: AppServerErrorCode.McpServerValidationFailed,
  mcpServerNameConflict: AppServerErrorCode.McpServerNameConflict,
  cronJobNotFound: AppServerErrorCode.CronJobNotFound,
  subagentNotFound: AppServerErrorCode.SubAgentProfileNotFound,
  subagentValidationFailed: AppServerErrorCode.SubAgentProfileValidationFailed,
  subagentProtected: AppServerErrorCode.SubAgentProfileProtected,
  channelNotFound: AppServerErrorCode.ExternalChannelNotFound,
  channelValidationFailed: AppServerErrorCode.ExternalChannelValidationFailed,
  channelNameConflict: AppServerErrorCode.ExternalChannelNameConflict,
};

/** The answer to any request but initialize on a connection that has not initialized. */
export function notInitialized(): RpcError {
  return new RpcError(AppServerErrorCode.NotInitialized, "Not initialized: the first request must be initialize.");
}

/** Runs `dispatch` once the connection is initialized; `initialize` itself only once. */
export async function dispatchInitialized(
  dispatch: Dispatch,
  initialized: boolean,
  method: string,
  params: unknown,
  ctx: RequestContext,
): Promise<unknown> {
  if (method === "initialize" && initialized) throw new RpcError(AppServerErrorCode.AlreadyInitialized, "Already initialized");
  if (method !== "initialize" && !initialized) throw notInitialized();
  try {
    return await dispatch(method, params, ctx);
  } catch (error) {
    if (error instanceof RuntimeError) throw new RpcError(RUNTIME_ERROR_CODES[error.code], error.message, error.data);
    throw error;
  }
}
