// JSON-RPC 2.0's own error codes, and the engine's answer when a connection has too many requests
// in flight. Each face declares its protocol's codes in its own errors.ts.

export const ErrorCode = {
  ParseError: -32700,
  InvalidRequest: -32600,
  MethodNotFound: -32601,
  InvalidParams: -32602,
  InternalError: -32603,
  /** The engine's default for the in-flight cap; a face whose protocol gives -32001 another meaning overrides it. */
  Overloaded: -32001,
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
