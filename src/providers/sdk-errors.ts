// Turns what an SDK failure tells us into a ProviderError, so both providers word and classify
// failures the same way. Kept free of SDK imports: each provider extracts the facts with its
// own (lazily loaded) SDK classes.
import { ProviderError, type ProviderErrorCode } from "./provider.js";

/** What a provider learned about a failed call, independent of the SDK that threw. */
export interface FailureFacts {
  /** Who we talked to, in words, e.g. "the OpenAI API" or "the model server at http://...". */
  service: string;
  /** HTTP status, when the server answered with one. */
  status?: number;
  /** The API's own error message (from the JSON error body). */
  apiMessage?: string;
  /** The API's error type, e.g. "rate_limit_error" or "overloaded_error". */
  apiType?: string;
  /** The API's error code, e.g. "context_length_exceeded". */
  apiCode?: string;
  /** True when no HTTP answer arrived, or the stream broke: refused, reset, timeout. */
  connection?: boolean;
  /** True when the response could not be parsed. */
  invalidResponse?: boolean;
  /** True for failures that fit no category (most likely a bug); reported with `detail`. */
  unexpected?: boolean;
  /** A low-level detail for connection failures, e.g. "other side closed". */
  detail?: string;
  /** True when the provider had already yielded events when the failure happened. */
  afterOutput: boolean;
  /** True when the server had started answering (headers received) before the failure. */
  midResponse?: boolean;
  /** How long the service asked us to wait before retrying (retry-after headers), in ms. */
  retryAfterMs?: number;
}

/** What a provider reads from an SDK failure; the stream adds who it talked to and whether output came. */
export type SdkFailure = Omit<FailureFacts, "service" | "afterOutput">;

const CONTEXT_TOO_LONG = /context[ _-]?(length|window)|too long|maximum context/i;

/**
 * Error types that arrive inside a 200 stream, without an HTTP status, mapped to the status the
 * provider documents for them; so an overloaded or failing server mid-stream classifies (and
 * retries) like the same failure would as an HTTP answer.
 */
const STREAM_ERROR_STATUS: Record<string, number> = { overloaded_error: 529, api_error: 500, server_error: 500 };

export function toProviderError(f: FailureFacts): ProviderError {
  const before = !f.afterOutput;
  // Sentences below end with their own period, so drop the API message's.
  const said = f.apiMessage ? `: ${f.apiMessage.trim().replace(/[.!?]$/, "")}` : "";
  const http = f.status !== undefined ? ` (HTTP ${f.status})` : "";
  const { status } = f;
  const options = f.retryAfterMs !== undefined ? { retryAfterMs: f.retryAfterMs } : {};
  const make = (code: ProviderErrorCode, message: string, httpStatus?: number): ProviderError =>
    new ProviderError(code, message, httpStatus, before, options);
  const kind = `${f.apiType ?? ""} ${f.apiCode ?? ""}`;

  if (status === 401 || status === 403 || /authentication_error|permission_error/.test(kind)) {
    return make("authentication", `${cap(f.service)} rejected the credentials${http}${said}. Check the API key.`, status);
  }
  // A spent quota also answers 429, but waiting does not help: not a (retryable) rate limit.
  if (/insufficient_quota/.test(kind)) {
    return make(
      "providerError",
      `${cap(f.service)} reports the account's quota is used up${http}${said}. Check the plan and billing details.`,
      status,
    );
  }
  if (status === 429 || /rate_limit_error|rate_limit_exceeded/.test(kind)) {
    return make("rateLimited", `${cap(f.service)} is rate limiting requests${http}${said}. Wait a moment and try again.`, status);
  }
  // In-stream failures (no status) can also report an overflow, e.g. Responses' response.failed.
  const contextHint = `${f.apiMessage ?? ""} ${f.apiCode ?? ""}`;
  if ((status === 400 || status === 413 || status === undefined) && CONTEXT_TOO_LONG.test(contextHint)) {
    return make("contextWindowExceeded", `The conversation is too long for the model's context window${http}${said}.`, status);
  }
  if (f.connection) {
    const detail = f.detail ? ` (${f.detail})` : "";
    const message =
      f.afterOutput || f.midResponse
        ? `The connection to ${f.service} was lost in the middle of the response${detail}.`
        : `Could not reach ${f.service}${detail}.`;
    return make("connection", message);
  }
  if (f.invalidResponse) {
    const detail = f.detail ? ` (${f.detail})` : "";
    return make("invalidResponse", `${cap(f.service)} sent a response that could not be read${detail}.`);
  }
  if (f.unexpected) {
    return make("providerError", `Unexpected failure while talking to ${f.service}: ${f.detail ?? "unknown error"}.`);
  }
  if (status !== undefined) {
    return make("providerError", `${cap(f.service)} returned HTTP ${status}${said}.`, status);
  }
  // An error event inside an otherwise successful stream (e.g. Anthropic's overloaded_error).
  const type = f.apiType ? ` (${f.apiType})` : f.apiCode ? ` (${f.apiCode})` : "";
  const documented = STREAM_ERROR_STATUS[f.apiType ?? ""] ?? STREAM_ERROR_STATUS[f.apiCode ?? ""];
  return make("providerError", `${cap(f.service)} reported an error during the response${type}${said}.`, documented);
}

/** The part of a fetch Headers object we read; both SDKs' APIError carry one. */
export interface HeaderReader {
  get(name: string): string | null;
}

/**
 * How long a failed response asked us to wait: `retry-after-ms` (non-standard, but both SDKs
 * honour it first), else `retry-after` as seconds or an HTTP date. Undefined when absent or
 * unparseable; a date in the past counts as 0.
 */
export function retryAfterFromHeaders(headers: HeaderReader | undefined | null): number | undefined {
  if (!headers) return undefined;
  const ms = Number.parseFloat(headers.get("retry-after-ms") ?? "");
  if (Number.isFinite(ms) && ms >= 0) return ms;
  const value = headers.get("retry-after")?.trim();
  if (!value) return undefined;
  const waitMs = /^\d+(\.\d+)?$/.test(value) ? Number.parseFloat(value) * 1000 : Date.parse(value) - Date.now();
  return Number.isFinite(waitMs) ? Math.max(0, waitMs) : undefined;
}

/**
 * Resolves like `promise`, or with undefined as soon as `signal` aborts. The openai SDK sleeps
 * through a retry-after wait without watching the signal, which could delay an interrupt by
 * the whole wait; the abandoned promise's eventual rejection is swallowed.
 */
export function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T | undefined> {
  return new Promise((resolve, reject) => {
    const onAbort = (): void => {
      promise.catch(() => undefined);
      resolve(undefined);
    };
    if (signal.aborted) return onAbort();
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener("abort", onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener("abort", onAbort);
        reject(error);
      },
    );
  });
}

/** "low-level detail" of an unknown thrown value, including its cause (undici puts the socket error there). */
export function describeCause(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = error.cause instanceof Error && error.cause.message !== error.message ? `: ${error.cause.message}` : "";
  return `${error.message}${cause}`;
}

/**
 * True for what fetch (undici) throws when a socket fails outside the SDK's own request
 * handling, i.e. while the stream body is being read: "terminated", ECONNRESET, UND_ERR_*.
 */
function isConnectionFailure(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  if (error.name === "TypeError" && /terminated|fetch failed|network/i.test(error.message)) return true;
  const code = (error as { code?: unknown }).code ?? (error.cause as { code?: unknown } | undefined)?.code;
  return typeof code === "string" && /^(E[A-Z]+$|UND_ERR_)/.test(code);
}

/** An SDK's connection error: no HTTP answer arrived. */
export function connectionFailure(error: Error): SdkFailure {
  return { connection: true, detail: describeCause(error.cause ?? error) };
}

/**
 * An SDK's HTTP error (its APIError): the status, the API's message (else the SDK's, without
 * the status it starts with), type and code, and how long the service asked us to wait.
 */
export function apiFailure(
  error: { status?: number | undefined; message: string; headers?: HeaderReader | undefined | null },
  body: { apiMessage?: string | undefined; apiType?: string | null | undefined; apiCode?: string | null | undefined },
): SdkFailure {
  const apiMessage = body.apiMessage ?? stripStatus(error.message, error.status);
  const retryAfterMs = retryAfterFromHeaders(error.headers);
  return {
    ...(error.status !== undefined ? { status: error.status } : {}),
    ...(apiMessage ? { apiMessage } : {}),
    ...(body.apiType ? { apiType: body.apiType } : {}),
    ...(body.apiCode ? { apiCode: body.apiCode } : {}),
    ...(retryAfterMs !== undefined ? { retryAfterMs } : {}),
  };
}

/** Any other failure: a body that does not parse, a socket that broke mid-stream, or a bug. */
export function otherFailure(error: unknown): SdkFailure {
  if (error instanceof SyntaxError) return { invalidResponse: true, detail: error.message };
  return isConnectionFailure(error)
    ? { connection: true, detail: describeCause(error) }
    : { unexpected: true, detail: describeCause(error) };
}

function stripStatus(message: string, status: number | undefined): string {
  return status !== undefined ? message.replace(new RegExp(`^${status}\\s*`), "") : message;
}

/** Extracts a plain message from an SDK error's parsed body (or raw text) without trusting its shape. */
export function messageFromBody(body: unknown): string | undefined {
  if (typeof body === "string") return body || undefined;
  if (body && typeof body === "object") {
    const record = body as { message?: unknown; error?: unknown };
    if (typeof record.message === "string") return record.message;
    if (record.error !== undefined) return messageFromBody(record.error);
  }
  return undefined;
}

function cap(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}
