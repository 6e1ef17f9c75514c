// Ollama: its model list (<host>/api/tags) for auto-detection, and its OpenAI-compatible Chat
// Completions endpoint as a provider. Where it is (OLLAMA_HOST) is in endpoints.ts.
import net from "node:net";
import type { OpenAIChatProvider } from "./openai-chat.js";
import { ollamaBaseURL, ollamaRoot } from "./endpoints.js";
import { httpFetch } from "./http-fetch.js";

/** Used when no model was chosen and none was detected. */
export const OLLAMA_FALLBACK_MODEL = "llama3.2";

/** The Chat Completions provider's code loads with the provider, not with detection. */
export async function createOllamaProvider(env: NodeJS.ProcessEnv, model?: string): Promise<OpenAIChatProvider> {
  const { OpenAIChatProvider } = await import("./openai-chat.js");
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
  const root = ollamaRoot(env);
  const signal = AbortSignal.timeout(timeoutMs);
  if (!(await accepts(new URL(root), signal))) return undefined;
  try {
    const response = await httpFetch(`${root}/api/tags`, { signal });
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

/**
 * Whether anything accepts a TCP connection at the URL's host and port. Most machines run no
 * Ollama, and a refused connection is known this way without node:http, whose first request
 * loads and runs ~6 ms of client code (on the path of a claude-dialect client's initialize when
 * no provider is configured).
 */
function accepts(url: URL, signal: AbortSignal): Promise<boolean> {
  const port = Number(url.port) || (url.protocol === "https:" ? 443 : 80);
  const host = url.hostname.replace(/^\[(.*)\]$/, "$1");
  return new Promise((resolve) => {
    const socket = net.connect({ host, port, signal });
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });
}
