// Where each provider's API is, from the environment: what the catalog, detection and the
// providers all need, with none of the providers' code (a server answers some requests with
// the catalog before it has loaded that code).

/** True for api.openai.com (or no base URL, which means it). */
export function isOfficialOpenAI(baseURL: string | undefined): boolean {
  if (!baseURL) return true;
  try {
    return new URL(baseURL).hostname === "api.openai.com";
  } catch {
    return false;
  }
}

/**
 * The Ollama server's root URL from OLLAMA_HOST, read the way Ollama reads it: "host",
 * "host:port", ":port" or a URL; default http://127.0.0.1:11434. A bind-all address (0.0.0.0,
 * set for the Ollama server itself) is dialled on loopback.
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

/** Ollama's OpenAI-compatible Chat Completions endpoint. */
export function ollamaBaseURL(env: NodeJS.ProcessEnv): string {
  return `${ollamaRoot(env)}/v1`;
}
