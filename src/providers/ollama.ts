// Ollama: its OpenAI-compatible Chat Completions endpoint (<host>/v1), found where Ollama's own
// CLI looks for it (OLLAMA_HOST), and its model list (<host>/api/tags) for auto-detection.
import { OpenAIChatProvider } from "./openai-chat.js";
import { httpFetch } from "./http-fetch.js";

/** Used when no model was chosen and none was detected. */
export const OLLAMA_FALLBACK_MODEL = "llama3.2";

/**
 * The server's root URL from OLLAMA_HOST, read the way Ollama reads it: "host", "host:port",
 * ":port" or a URL; default http://127.0.0.1:11434. A bind-all address (0.0.0.0, set for the
 * Ollama server itself) is dialled on loopback.
 */
export function ollamaRoot(env: NodeJS.ProcessEnv): string {
  const raw = env["OLLAMA_HOST"]?.trim() ?? "";
  const schemeEnd = raw.indexOf("://");
  const scheme = schemeEnd >= 0 ? raw.slice(0, schemeEnd) : "http";
  const rest = schemeEnd >= 0 ? raw.slice(schemeEnd + 3) : raw;
  const slash = rest.indexOf("/");
  const hostPort = slash >= 0 ? rest.slice(0, slash) : rest;
  const path = slash >= 0 ? rest.slice(slash).replace(/\/+$/, "") : "";
  // An explicit scheme without a port means that scheme's port, as in Ollama.
  const defaultPort = schemeEnd < 0 ? "11434" : scheme === "https" ? "443" : scheme === "http" ? "80" : "11434";
  const match = /^(\[[^\]]*\]|[^:]*)(?::(\d+))?$/.exec(hostPort);
  let host = match?.[1] ?? "";
  const port = match?.[2] ?? defaultPort;
  if (host === "" || host === "0.0.0.0" || host === "[::]") host = "127.0.0.1";
  return `${scheme}://${host}:${port}${path}`;
}

export function ollamaBaseURL(env: NodeJS.ProcessEnv): string {
  return `${ollamaRoot(env)}/v1`;
}

export function createOllamaProvider(env: NodeJS.ProcessEnv, model?: string): OpenAIChatProvider {
  return new OpenAIChatProvider({
    name: "ollama",
    serviceLabel: "Ollama",
    baseURL: ollamaBaseURL(env),
    apiKey: "ollama", // ignored by Ollama; the SDK insists on one
    defaultModel: model || OLLAMA_FALLBACK_MODEL,
  });
}

/**
 * The names of the models Ollama has installed (GET /api/tags), or undefined when nothing
 * answered 200 within `timeoutMs` (not running, not Ollama, too slow).
 */
export async function listOllamaModels(env: NodeJS.ProcessEnv, timeoutMs = 300): Promise<string[] | undefined> {
  try {
    const response = await httpFetch(`${ollamaRoot(env)}/api/tags`, { signal: AbortSignal.timeout(timeoutMs) });
    if (response.status !== 200) {
      await response.body?.cancel();
      return undefined;
    }
    const body = (await response.json()) as { models?: Array<{ name?: unknown; model?: unknown }> };
    if (!Array.isArray(body?.models)) return undefined;
    return body.models.flatMap((m) => (typeof m?.name === "string" ? [m.name] : typeof m?.model === "string" ? [m.model] : []));
  } catch {
    return undefined;
  }
}
