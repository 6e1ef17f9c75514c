// The retry policy (withRetries) with stand-in providers, and how failures are classified for it.
// The same policy over real HTTP against each SDK is covered in providers.test.ts.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { isRetryable, withRetries, type RetryPolicy } from "../../src/providers/retry.js";
import { retryAfterFromHeaders, toProviderError } from "../../src/providers/sdk-errors.js";
import { ProviderError, type ModelProvider, type ModelRequest, type ModelStreamEvent } from "../../src/providers/provider.js";

const REQUEST: ModelRequest = { model: "m", system: "", messages: [{ role: "user", content: "hi" }], tools: [] };
const OK: ModelStreamEvent[] = [
  { type: "textDelta", delta: "ok" },
  { type: "stop", reason: "end" },
];

/** A provider whose calls play `outcomes` in turn: an error thrown before output, or events. */
function scripted(...outcomes: Array<ProviderError | ModelStreamEvent[] | { eventsThen: ModelStreamEvent[]; error: ProviderError }>) {
  const calls = { count: 0 };
  const provider: ModelProvider = {
    name: "stub",
    defaultModel: "m",
    async *stream() {
      const outcome = outcomes[calls.count++] ?? OK;
      if (outcome instanceof ProviderError) throw outcome;
      if (Array.isArray(outcome)) return yield* outcome;
      yield* outcome.eventsThen;
      throw outcome.error;
    },
  };
  return { provider, calls };
}

/** A policy that records its waits instead of sleeping, with jitter pinned to its maximum. */
function recording(extra: RetryPolicy = {}): { policy: RetryPolicy; waits: number[] } {
  const waits: number[] = [];
  const policy: RetryPolicy = { random: () => 1, sleep: async (ms) => void waits.push(ms), ...extra };
  return { policy, waits };
}

async function collect(
  provider: ModelProvider,
  signal = new AbortController().signal,
): Promise<{ events: ModelStreamEvent[]; error?: unknown }> {
  const events: ModelStreamEvent[] = [];
  try {
    for await (const event of provider.stream(REQUEST, signal)) events.push(event);
    return { events };
  } catch (error) {
    return { events, error };
  }
}

const rateLimited = (retryAfterMs?: number): ProviderError =>
  new ProviderError("rateLimited", "slow down", 429, true, retryAfterMs === undefined ? {} : { retryAfterMs });

describe("withRetries", () => {
  test("keeps the provider's name and default model", () => {
    const wrapped = withRetries(scripted().provider);
    assert.equal(wrapped.name, "stub");
    assert.equal(wrapped.defaultModel, "m");
  });

  test("backs off exponentially, capped, up to maxAttempts, then throws the last error", async () => {
    const { provider, calls } = scripted(rateLimited(), rateLimited(), rateLimited(), rateLimited(), rateLimited());
    const { policy, waits } = recording({ maxAttempts: 5, baseDelayMs: 100, maxDelayMs: 500 });
    const { error } = await collect(withRetries(provider, policy));
    assert.ok(error instanceof ProviderError && error.code === "rateLimited");
    assert.equal(calls.count, 5);
    assert.deepEqual(waits, [100, 200, 400, 500]);
  });

  test("uses full jitter: a random share of the backoff", async () => {
    const { provider } = scripted(rateLimited(), rateLimited());
    const { policy, waits } = recording({ maxAttempts: 3, baseDelayMs: 100, random: () => 0.25 });
    await collect(withRetries(provider, policy));
    assert.deepEqual(waits, [25, 50]);
  });

  test("defaults to 4 attempts starting at up to 500 ms", async () => {
    const { provider, calls } = scripted(rateLimited(), rateLimited(), rateLimited(), rateLimited());
    const { policy, waits } = recording();
    const { error } = await collect(withRetries(provider, policy));
    assert.ok(error instanceof ProviderError);
    assert.equal(calls.count, 4);
    assert.deepEqual(waits, [500, 1000, 2000]);
  });

  test("waits what the error's retry-after says, and gives up when that is beyond maxDelayMs", async () => {
    const honoured = recording({ baseDelayMs: 10_000 });
    const first = scripted(rateLimited(1234));
    assert.equal((await collect(withRetries(first.provider, honoured.policy))).error, undefined);
    assert.deepEqual(honoured.waits, [1234]);

    const tooLong = recording({ maxDelayMs: 1000 });
    const second = scripted(rateLimited(60_000));
    const { error } = await collect(withRetries(second.provider, tooLong.policy));
    assert.equal((error as ProviderError).retryAfterMs, 60_000);
    assert.equal(second.calls.count, 1);
    assert.deepEqual(tooLong.waits, []);
  });

  test("retries connection failures and 5xx/408/409, nothing else", async () => {
    const retried = [
      new ProviderError("connection", "reset"),
      new ProviderError("providerError", "x", 500),
      new ProviderError("providerError", "x", 529),
      new ProviderError("providerError", "x", 408),
      new ProviderError("providerError", "x", 409),
    ];
    for (const error of retried) {
      const { provider, calls } = scripted(error);
      assert.equal((await collect(withRetries(provider, recording().policy))).error, undefined, error.message);
      assert.equal(calls.count, 2);
    }
    const final = [
      new ProviderError("authentication", "bad key", 401),
      new ProviderError("contextWindowExceeded", "too long", 400),
      new ProviderError("providerError", "bad request", 400),
      new ProviderError("providerError", "no status"),
      new ProviderError("invalidResponse", "garbled"),
      new ProviderError("noProvider", "none"),
    ];
    for (const error of final) {
      const { provider, calls } = scripted(error);
      assert.equal((await collect(withRetries(provider, recording().policy))).error, error);
      assert.equal(calls.count, 1, error.code);
    }
    assert.equal(isRetryable(new Error("plain")), false);
  });

  test("never retries once output was yielded, nor errors marked as after output", async () => {
    const afterEvents = scripted({ eventsThen: [{ type: "textDelta", delta: "part" }], error: rateLimited() });
    const first = await collect(withRetries(afterEvents.provider, recording().policy));
    assert.deepEqual(first.events, [{ type: "textDelta", delta: "part" }]);
    assert.ok(first.error instanceof ProviderError);
    assert.equal(afterEvents.calls.count, 1);

    const marked = scripted(new ProviderError("connection", "lost mid-response", undefined, false));
    await collect(withRetries(marked.provider, recording().policy));
    assert.equal(marked.calls.count, 1);
  });

  test("an abort during the wait ends the stream at once, without an error or another call", async () => {
    const { provider, calls } = scripted(rateLimited(10_000));
    const controller = new AbortController();
    const started = Date.now();
    setTimeout(() => controller.abort(), 30);
    const { events, error } = await collect(withRetries(provider, { maxDelayMs: 60_000 }), controller.signal);
    assert.ok(Date.now() - started < 500);
    assert.equal(error, undefined);
    assert.deepEqual(events, []);
    assert.equal(calls.count, 1);
  });
});

describe("retry-after and failure classification", () => {
  test("reads retry-after-ms first, then retry-after as seconds or a date", () => {
    assert.equal(retryAfterFromHeaders(new Headers({ "retry-after-ms": "250", "retry-after": "9" })), 250);
    assert.equal(retryAfterFromHeaders(new Headers({ "retry-after": "2" })), 2000);
    assert.equal(retryAfterFromHeaders(new Headers({ "retry-after": "1.5" })), 1500);
    const date = retryAfterFromHeaders(new Headers({ "retry-after": new Date(Date.now() + 5000).toUTCString() }));
    assert.ok(date !== undefined && date > 3000 && date <= 5000, String(date));
    assert.equal(retryAfterFromHeaders(new Headers({ "retry-after": new Date(Date.now() - 5000).toUTCString() })), 0);
    assert.equal(retryAfterFromHeaders(new Headers({ "retry-after": "soon" })), undefined);
    assert.equal(retryAfterFromHeaders(new Headers()), undefined);
    assert.equal(retryAfterFromHeaders(undefined), undefined);
  });

  test("carries the retry-after into the ProviderError", () => {
    const error = toProviderError({ service: "the API", status: 429, retryAfterMs: 700, afterOutput: false });
    assert.equal(error.code, "rateLimited");
    assert.equal(error.retryAfterMs, 700);
    assert.equal(new ProviderError("connection", "x").retryAfterMs, undefined);
  });

  test("in-stream overload and server errors get the status their API documents, so they are retried", () => {
    const overloaded = toProviderError({
      service: "the Anthropic API",
      apiType: "overloaded_error",
      apiMessage: "Overloaded",
      afterOutput: false,
    });
    assert.equal(overloaded.code, "providerError");
    assert.equal(overloaded.httpStatus, 529);
    assert.ok(isRetryable(overloaded));
    const server = toProviderError({ service: "the OpenAI API", apiCode: "server_error", afterOutput: false });
    assert.equal(server.httpStatus, 500);
    const unknown = toProviderError({ service: "the OpenAI API", apiCode: "invalid_prompt", afterOutput: false });
    assert.equal(unknown.httpStatus, undefined);
    assert.equal(isRetryable(unknown), false);
  });

  test("a spent quota is not a rate limit and is not retried", () => {
    const error = toProviderError({
      service: "the OpenAI API",
      status: 429,
      apiType: "insufficient_quota",
      apiCode: "insufficient_quota",
      apiMessage: "You exceeded your current quota, please check your plan and billing details.",
      afterOutput: false,
    });
    assert.equal(error.code, "providerError");
    assert.equal(error.httpStatus, 429);
    assert.match(error.message, /quota/);
    assert.equal(isRetryable(error), false);
  });

  test("in-stream rate limits and context overflows are classified without a status", () => {
    assert.equal(toProviderError({ service: "s", apiCode: "rate_limit_exceeded", afterOutput: false }).code, "rateLimited");
    assert.equal(toProviderError({ service: "s", apiCode: "context_length_exceeded", afterOutput: false }).code, "contextWindowExceeded");
  });
});
