// Errors the runtime raises for bad requests. Faces map `code` to their wire error codes.

export type RuntimeErrorCode =
  | "threadNotFound"
  | "threadNotActive"
  | "turnInProgress"
  | "turnNotFound"
  | "turnNotRunning"
  | "invalidInput"
  | "replayGap"
  /** The data directory cannot be written (disk full, I/O error): reads still work. */
  | "storageUnavailable"
  /** Another node of the cluster runs this thread's turn (retryable: it moves when idle). */
  | "notOwner"
  | "skillNotFound"
  | "commandNotFound"
  | "mcpServerNotFound"
  | "mcpValidationFailed"
  | "mcpServerNameConflict"
  | "cronJobNotFound"
  | "subagentNotFound"
  | "subagentValidationFailed"
  | "subagentProtected"
  | "channelNotFound"
  | "channelValidationFailed"
  | "channelNameConflict"
  | "pluginNotFound";

export class RuntimeError extends Error {
  constructor(
    readonly code: RuntimeErrorCode,
    message: string,
    readonly data?: Record<string, unknown>,
  ) {
    super(message);
    this.name = "RuntimeError";
  }
}
