// JSON-RPC error codes: the standard ones and those of the AppServer protocol.

export const ErrorCode = {
  ParseError: -32700,
  InvalidRequest: -32600,
  MethodNotFound: -32601,
  InvalidParams: -32602,
  InternalError: -32603,
  Overloaded: -32001,
  NotInitialized: -32002,
  AlreadyInitialized: -32003,
  ThreadNotFound: -32010,
  ThreadNotActive: -32011,
  TurnInProgress: -32012,
  TurnNotFound: -32013,
  TurnNotRunning: -32014,
  ApprovalTimeout: -32020,
} as const;

export type ErrorCodeValue = (typeof ErrorCode)[keyof typeof ErrorCode];

/** An error that becomes a JSON-RPC error response (or is received as one). */
export class RpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
  ) {
    super(message);
    this.name = "RpcError";
  }

  toJSON(): { code: number; message: string; data?: unknown } {
    return this.data === undefined
      ? { code: this.code, message: this.message }
      : { code: this.code, message: this.message, data: this.data };
  }
}
