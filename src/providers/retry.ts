// The one retry policy for model calls. The SDKs' own retries are off (maxRetries 0) so that
// every provider, including ones without an SDK, retries the same way and the wait can be
// interrupted.
import { ProviderError, type ModelProvider, type ModelRequest, type ModelStreamEvent } from "./provider.js";

export interface RetryPolicy {
  /** Calls in all, the first included. Default 4. */
  maxAttempts?: number;
  /** The backoff cap of the first retry; doubles for each further one. Default 500. */
  baseDelayMs?: number;
  /**
   * Upper bound of any wait. A retry-after above it is not waited for: the error is thrown,
   * since retrying earlier than the server allows would fail again. Default 30000.
   */
  maxDelayMs?: number;
  /** Waits `ms`, resolving early (never rejecting) when `signal` aborts. For tests. */
  sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
  /** A number in [0, 1) for the jitter. For tests. */
  random?: () => number;
}

/** True for failures worth another identical call: nothing was output and the cause is transient. */
export function isRetryable(error: unknown): error is ProviderError {
  if (!(error instanceof ProviderError) || !error.beforeOutput) return false;
  switch (error.code) {
    case "rateLimited":
    case "connection":
      return true;
    case "providerError": {
      const status = error.httpStatus;
      return status !== undefined && (status >= 500 || status === 408 || status === 409);
    }
    default:
      return false;
  }
}

/**
 * Wraps `provider` so a stream() that fails retryably before yielding anything is called again,
 * after the error's retry-after or else an exponential backoff with full jitter. Aborting
 * `signal` during a wait ends the stream at once, silently, like the providers do on abort.
 */
export function withRetries(provider: ModelProvider, policy: RetryPolicy = {}): ModelProvider {
  const maxAttempts = Math.max(1, policy.maxAttempts ?? 4);
  const baseDelayMs = policy.baseDelayMs ?? 500;
  const maxDelayMs = policy.maxDelayMs ?? 30_000;
  const sleep = policy.sleep ?? abortableSleep;
  const random = policy.random ?? Math.random;

  async function* stream(request: ModelRequest, signal: AbortSignal): AsyncIterable<ModelStreamEvent> {
    for (let attempt = 1; ; attempt++) {
      let yielded = false;
      try {
        for await (const event of provider.stream(request, signal)) {
          yielded = true;
          yield event;
        }
        return;
      } catch (error) {
        // `yielded` double-checks beforeOutput: output already shown is never repeated.
        if (yielded || signal.aborted || attempt >= maxAttempts || !isRetryable(error)) throw error;
        const backoff = random() * Math.min(maxDelayMs, baseDelayMs * 2 ** (attempt - 1));
        const wait = error.retryAfterMs ?? backoff;
        if (wait > maxDelayMs) throw error;
        await sleep(wait, signal);
        if (signal.aborted) return;
      }
    }
  }

  return {
    name: provider.name,
    defaultModel: provider.defaultModel,
    stream,
    ...(provider.prepare ? { prepare: () => provider.prepare!() } : {}),
  };
}

/** setTimeout that resolves as soon as `signal` aborts, and does not hold the process open then. */
export function abortableSleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const done = (): void => {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener("abort", done, { once: true });
  });
}
