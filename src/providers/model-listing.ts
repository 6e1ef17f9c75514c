// Live model listings from the providers' models endpoints (OpenAI and Anthropic
// `GET /v1/models`, Ollama `GET /api/tags`), with failures put in plain words. A plain GET
// (httpFetch) rather than the SDKs: one small request each, the same error wording for every provider.
import { ollamaRoot } from "./endpoints.js";
import { isLoopbackHost } from "../loopback.js";
import { httpFetch } from "./http-fetch.js";

export interface LiveModel {
  id: string;
  displayName?: string;
}

export type ModelListing = { ok: true; url: string; models: LiveModel[] } | { ok: false; url?: string; problem: string };

interface Endpoint {
  url: string;
  headers: Record<string, string>;
  read(body: unknown): LiveModel[] | undefined;
}

const DEFAULT_TIMEOUT_MS = 10_000;

/**
 * Lists the models `provider` offers, with its settings taken from `env` (see
 * config/providers.ts). Undefined for providers without a models endpoint (scripted).
 */
export async function listLiveModels(
  provider: string,
  env: NodeJS.ProcessEnv,
  opts: { timeoutMs?: number } = {},
): Promise<ModelListing | undefined> {
  const endpoint = endpointOf(provider, env);
  if (endpoint === undefined || "problem" in endpoint) return endpoint && { ok: false, problem: endpoint.problem };
  const timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const { url } = endpoint;
  let response: Response;
  try {
    response = await httpFetch(url, { headers: endpoint.headers, signal: AbortSignal.timeout(timeoutMs) });
  } catch (error) {
    return { ok: false, url, problem: connectionProblem(error, url, timeoutMs) };
  }
  if (response.status === 401 || response.status === 403) {
    await response.body?.cancel();
    return { ok: false, url, problem: `the API key was rejected (HTTP ${response.status} from ${url})` };
  }
  const body: unknown = await response.json().catch(() => undefined);
  if (!response.ok) {
    const said = apiMessage(body);
    return { ok: false, url, problem: `${url} answered HTTP ${response.status}${said ? `: ${said}` : ""}` };
  }
  const models = endpoint.read(body);
  return models ? { ok: true, url, models } : { ok: false, url, problem: `${url} did not answer with a model list` };
}

/**
 * Whether listing `provider`'s models means a round trip to another machine: its endpoint is not
 * on loopback. False when there is nothing to ask (no endpoint, or settings that cannot be used).
 */
export function listingIsRemote(provider: string, env: NodeJS.ProcessEnv): boolean {
  const endpoint = endpointOf(provider, env);
  if (endpoint === undefined || "problem" in endpoint) return false;
  try {
    return !isLoopbackHost(new URL(endpoint.url).hostname);
  } catch {
    return false; // the listing fails at once on such a URL
  }
}

/** Whether a listing offers `model`, also accepting aliases of dated or tagged ids. */
export function offersModel(models: LiveModel[], model: string): boolean {
  // "claude-sonnet-4-5" is served as "claude-sonnet-4-5-20250929"; Ollama's "llama3.2" as "llama3.2:latest".
  return models.some((m) => m.id === model || m.id.startsWith(`${model}-`) || m.id === `${model}:latest`);
}

function endpointOf(provider: string, env: NodeJS.ProcessEnv): Endpoint | { problem: string } | undefined {
  switch (provider.trim().toLowerCase()) {
    case "openai":
    case "openai-chat": {
      const base = env["OPENAI_BASE_URL"] || "https://api.openai.com/v1";
      const key = env["OPENAI_API_KEY"];
      // A compatible local server (a custom base URL) may need no key at all.
      if (!key && !env["OPENAI_BASE_URL"])
        return { problem: "no API key is set (OPENAI_API_KEY, or providers.openai.apiKey in config.json)" };
      return {
        url: `${trimSlash(base)}/models`,
        headers: key ? { authorization: `Bearer ${key}` } : {},
        read: (body) => dataArray(body)?.map((m) => ({ id: m.id })),
      };
    }
    case "anthropic": {
      const base = env["ANTHROPIC_BASE_URL"] || "https://api.anthropic.com";
      const key = env["ANTHROPIC_API_KEY"];
      if (!key && !env["ANTHROPIC_BASE_URL"])
        return { problem: "no API key is set (ANTHROPIC_API_KEY, or providers.anthropic.apiKey in config.json)" };
      return {
        url: `${trimSlash(base)}/v1/models?limit=1000`,
        headers: { "anthropic-version": "2023-06-01", ...(key ? { "x-api-key": key } : {}) },
        read: (body) =>
          dataArray(body)?.map((m) => ({ id: m.id, ...(typeof m["display_name"] === "string" ? { displayName: m["display_name"] } : {}) })),
      };
    }
    case "ollama":
      return {
        url: `${ollamaRoot(env)}/api/tags`,
        headers: {},
        read: (body) => {
          const models = isRecord(body) && Array.isArray(body["models"]) ? body["models"] : undefined;
          return models?.filter(isRecord).flatMap((m) => {
            const id = m["name"] ?? m["model"];
            return typeof id === "string" ? [{ id }] : [];
          });
        },
      };
    default:
      return undefined;
  }
}

function connectionProblem(error: unknown, url: string, timeoutMs: number): string {
  if (error instanceof Error && (error.name === "TimeoutError" || error.name === "AbortError")) {
    return `no answer from ${url} within ${Math.round(timeoutMs / 1000)} s`;
  }
  const code = errorCode(error);
  const origin = new URL(url).origin;
  if (code === "ECONNREFUSED") return `nothing answers at ${origin}`;
  if (code === "ENOTFOUND" || code === "EAI_AGAIN") return `the host of ${origin} was not found`;
  const cause = isRecord(error) && error["cause"] instanceof Error ? error["cause"].message : undefined;
  return `could not reach ${origin} (${code ?? cause ?? (error instanceof Error ? error.message : String(error))})`;
}

/**
 * The socket error's code: httpFetch rejects with the socket error itself, the platform's fetch
 * (a redirect) wraps it as `cause`; with several addresses it is an AggregateError.
 */
function errorCode(error: unknown): string | undefined {
  if (isRecord(error) && typeof error["code"] === "string") return error["code"];
  const cause = isRecord(error) ? error["cause"] : undefined;
  if (!isRecord(cause)) return undefined;
  if (typeof cause["code"] === "string") return cause["code"];
  const first = Array.isArray(cause["errors"]) ? cause["errors"][0] : undefined;
  return isRecord(first) && typeof first["code"] === "string" ? first["code"] : undefined;
}

function apiMessage(body: unknown): string | undefined {
  const error = isRecord(body) ? body["error"] : undefined;
  if (typeof error === "string") return error;
  return isRecord(error) && typeof error["message"] === "string" ? error["message"] : undefined;
}

function dataArray(body: unknown): Array<Record<string, unknown> & { id: string }> | undefined {
  const data = isRecord(body) ? body["data"] : undefined;
  if (!Array.isArray(data)) return undefined;
  return data.filter((m): m is Record<string, unknown> & { id: string } => isRecord(m) && typeof m["id"] === "string");
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null;
}

function trimSlash(url: string): string {
  return url.replace(/\/+$/, "");
}
