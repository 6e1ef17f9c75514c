// What the two OpenAI providers (Responses and Chat Completions) share: lazy loading of the
// official `openai` SDK, naming the service in messages, and reading the SDK's errors.
//
// Only types are imported from the SDK here: loading it costs noticeable startup time, and a
// server that never talks to OpenAI should not pay for it.
import type OpenAI from "openai";
import { ProviderError } from "./provider.js";
import { apiFailure, connectionFailure, describeCause, messageFromBody, otherFailure, type SdkFailure } from "./sdk-errors.js";
import { isOfficialOpenAI } from "./endpoints.js";
import { httpFetch } from "./http-fetch.js";

export type OpenAIModule = typeof import("openai");
export interface OpenAISdk {
  mod: OpenAIModule;
  client: OpenAI;
}

export interface OpenAIClientOptions {
  /** Defaults to OPENAI_API_KEY (read by the SDK). */
  apiKey?: string;
  /** Defaults to OPENAI_BASE_URL, then https://api.openai.com/v1 (read by the SDK). */
  baseURL?: string;
  /** The SDK's own retries. Default 0: withRetries (retry.ts) is the one retry policy. */
  maxRetries?: number;
}

/** Imports the SDK and builds the client on first use; a failed load is retried next time. */
export class LazyOpenAIClient {
  private sdk?: Promise<OpenAISdk>;

  constructor(private readonly options: OpenAIClientOptions) {}

  load(): Promise<OpenAISdk> {
    this.sdk ??= import("openai").then((mod) => {
      try {
        const { apiKey, baseURL } = this.options;
        return { mod, client: new mod.default({ apiKey, baseURL, maxRetries: this.options.maxRetries ?? 0, fetch: httpFetch }) };
      } catch (error) {
        // The SDK refuses to build a client without a key (no OPENAI_API_KEY).
        throw new ProviderError("authentication", `The OpenAI client could not be created: ${describeCause(error)}`);
      }
    });
    // A failed load must not be cached forever: the environment may be fixed later.
    this.sdk.catch(() => (this.sdk = undefined));
    return this.sdk;
  }
}

/** "the OpenAI API", or who else we talk to, e.g. "Ollama at http://..." with a `label`. */
export function describeOpenAIService(baseURL: string | undefined, label?: string): string {
  if (label) return baseURL ? `${label} at ${baseURL}` : label;
  return isOfficialOpenAI(baseURL) ? "the OpenAI API" : `the model server at ${baseURL}`;
}

/** Reads what an openai SDK error says; `mod` is absent when the SDK itself failed to load. */
export function describeOpenAIFailure(error: unknown, mod: OpenAIModule | undefined): SdkFailure {
  if (mod && error instanceof mod.APIConnectionError) return connectionFailure(error);
  // `error.error` is the body's "error" member: an object, or a string for Ollama-style bodies.
  if (mod && error instanceof mod.APIError)
    return apiFailure(error, { apiMessage: messageFromBody(error.error), apiType: error.type, apiCode: error.code });
  return otherFailure(error);
}
