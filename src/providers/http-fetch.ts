// The `fetch` handed to the model SDKs, built on node:http instead of the platform's fetch
// (undici), with an event stream's body cut into one chunk per event (sse-body.ts).
//
// Why: undici compiles and instantiates its WebAssembly HTTP parser on the first request. That
// costs about 12 ms of the first turn after start and 6–8 MB of resident memory that never goes
// away; node:http parses with the llhttp already inside the Node binary. The result is a real
// `Response`, so the SDKs see no difference. Requests this module does not need to handle
// (a streamed or multipart body, a redirect) are left to the platform's fetch.

import type { IncomingMessage } from "node:http";
import { createRequire } from "node:module";
import { Readable, pipeline } from "node:stream";
import { cutAtEvents, eventStreamResponse } from "./sse-body.js";

const REDIRECTS = new Set([301, 302, 303, 307, 308]);

// node:http (~3 ms), node:https (with TLS, ~2-3 ms) and node:zlib load on first use: every
// start loads this module (the providers' code), and the first answers given before the runtime
// is up need none of them (a probe for Ollama that is refused sends nothing), a local model
// server neither of the last two.
const builtin = createRequire(import.meta.url);
const http = (): typeof import("node:http") => builtin("node:http") as typeof import("node:http");
const https = (): typeof import("node:https") => builtin("node:https") as typeof import("node:https");
const zlib = (): typeof import("node:zlib") => builtin("node:zlib") as typeof import("node:zlib");

export const httpFetch: typeof fetch = async (input, init) => {
  const body = init?.body;
  // Not `input instanceof Request`: reading the global loads undici's fetch classes.
  const isRequest = typeof input !== "string" && !(input instanceof URL);
  if (isRequest || (body != null && typeof body !== "string" && !(body instanceof Uint8Array))) {
    return cutIfEvents(await fetch(input, init));
  }
  const url = new URL(input);
  const response = await send(url, init ?? {}, body ?? undefined);
  if (REDIRECTS.has(response.statusCode ?? 0) && response.headers.location) {
    response.destroy();
    return cutIfEvents(await fetch(input, init));
  }
  const headers = new Headers();
  const raw = response.rawHeaders;
  for (let i = 0; i < raw.length; i += 2) headers.append(raw[i]!, raw[i + 1]!);
  const status = response.statusCode ?? 502;
  const hasBody = init?.method !== "HEAD" && status !== 204 && status !== 304;
  const answer = { status, statusText: response.statusMessage ?? "", headers };
  if (hasBody && (response.headers["content-type"] ?? "").startsWith("text/event-stream"))
    return eventStreamResponse(decoded(response), answer);
  return new Response(hasBody ? (Readable.toWeb(decoded(response)) as ReadableStream<Uint8Array>) : null, answer);
};

/** A response of the platform's fetch, its event stream cut as ours are. */
function cutIfEvents(response: Response): Response {
  const type = response.headers.get("content-type") ?? "";
  if (!response.body || !type.startsWith("text/event-stream")) return response;
  return new Response(cutAtEvents(response.body), { status: response.status, statusText: response.statusText, headers: response.headers });
}

function send(url: URL, init: RequestInit, body: string | Uint8Array | undefined): Promise<IncomingMessage> {
  const headers = headerRecord(init.headers);
  if (body !== undefined) headers["content-length"] = String(Buffer.byteLength(body));
  const request = (url.protocol === "https:" ? https() : http()).request(url, {
    method: init.method ?? "GET",
    headers,
    signal: init.signal ?? undefined,
  });
  return new Promise((resolve, reject) => {
    request.once("response", resolve).once("error", reject);
    request.end(body);
  });
}

/**
 * Request headers as node:http takes them: names lower-cased, repeated names joined as fetch
 * joins them. Not through `new Headers()`: undici's fetch classes load on their first use
 * (~15 ms), and a request that fails to connect (a probe for a local server) never needs them.
 */
function headerRecord(init: RequestInit["headers"]): Record<string, string> {
  const record: Record<string, string> = {};
  if (!init) return record;
  // Headers and [name, value] arrays iterate as pairs; a plain record does not iterate.
  const pairs = Symbol.iterator in init ? (init as Iterable<[string, string]>) : Object.entries(init as Record<string, string>);
  for (const [name, value] of pairs) {
    const key = name.toLowerCase();
    record[key] = record[key] === undefined ? value : `${record[key]}, ${value}`;
  }
  return record;
}

/** The body without its content-encoding, as fetch would hand it over. */
function decoded(response: IncomingMessage): Readable {
  const encoding = response.headers["content-encoding"];
  const decoder =
    encoding === "gzip" || encoding === "x-gzip"
      ? zlib().createGunzip()
      : encoding === "deflate"
        ? zlib().createInflate()
        : encoding === "br"
          ? zlib().createBrotliDecompress()
          : undefined;
  return decoder ? pipeline(response, decoder, () => {}) : response;
}
