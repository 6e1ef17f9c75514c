// The Codex dialect's error codes. Codex's app-server answers a request it cannot serve (an
// unknown thread, a turn that is not running) with -32600 and a message that says why; so does
// this face. Invalid params keep -32602 with the zod issues, as on every face.
import { RuntimeError } from "../../domain/errors.js";
import { ErrorCode, RpcError } from "../../rpc/errors.js";
import { isRecord } from "./wire.js";

/** Switchyard's, past JSON-RPC's range: the disk is full (see docs/reliability.md). */
const STORAGE_UNAVAILABLE = -32030;

/** A runtime error as this face's RpcError; any other error unchanged. */
export function codexError(error: unknown): unknown {
  if (!(error instanceof RuntimeError)) return error;
  const code =
    error.code === "invalidInput"
      ? ErrorCode.InvalidParams
      : error.code === "storageUnavailable"
        ? STORAGE_UNAVAILABLE
        : ErrorCode.InvalidRequest;
  return new RpcError(code, error.message, { reason: error.code, ...(isRecord(error.data) ? error.data : {}) });
}

export function notInitialized(): RpcError {
  return new RpcError(ErrorCode.InvalidRequest, "Not initialized");
}
