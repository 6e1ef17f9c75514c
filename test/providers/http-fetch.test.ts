// The node:http fetch hands the SDKs what the platform's fetch would: status, headers, a decoded
// body, the request body intact, and an abort that ends the stream.
import { test } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import zlib from "node:zlib";
import type { AddressInfo } from "node:net";
import { httpFetch } from "../../src/providers/http-fetch.js";

async function serve(handler: http.RequestListener): Promise<{ url: string; close: () => void }> {
  const server = http.createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  const close = (): void => {
    server.closeAllConnections();
    server.close();
  };
  return { url: `http://127.0.0.1:${port}`, close };
}

test("a request's method, headers and body arrive; the response's status, headers and gzip body come back", async () => {
  const seen: Array<{ method?: string; auth?: string; length?: string; body: string }> = [];
  const server = await serve((req, res) => {
    let body = "";
    req.on("data", (chunk: Buffer) => (body += chunk.toString()));
    req.on("end", () => {
      seen.push({ method: req.method, auth: req.headers.authorization, length: req.headers["content-length"], body });
      res.writeHead(201, "Made", [
        ["content-encoding", "gzip"],
        ["content-type", "application/json"],
        ["x-id", "a"],
        ["x-id", "b"],
      ]);
      res.end(zlib.gzipSync('{"ok":"é"}'));
    });
  });
  try {
    const response = await httpFetch(`${server.url}/v1/x`, {
      method: "POST",
      headers: new Headers({ authorization: "Bearer k" }),
      body: '{"prompt":"é"}',
    });
    assert.deepEqual(seen, [{ method: "POST", auth: "Bearer k", length: "15", body: '{"prompt":"é"}' }]);
    assert.equal(response.status, 201);
    assert.equal(response.statusText, "Made");
    assert.equal(response.headers.get("x-id"), "a, b");
    assert.deepEqual(await response.json(), { ok: "é" });
  } finally {
    server.close();
  }
});

test("aborting the signal ends a body that is still streaming", async () => {
  const server = await serve((_req, res) => {
    res.writeHead(200, { "content-type": "text/event-stream" });
    res.write("data: 1\n\n");
  });
  try {
    const controller = new AbortController();
    const response = await httpFetch(server.url, { signal: controller.signal });
    const reader = (response.body as unknown as AsyncIterable<Uint8Array>)[Symbol.asyncIterator]();
    assert.equal(new TextDecoder().decode((await reader.next()).value), "data: 1\n\n");
    controller.abort();
    await assert.rejects(reader.next());
  } finally {
    server.close();
  }
});

test("a redirect is left to the platform's fetch, which follows it", async () => {
  const server = await serve((req, res) => {
    if (req.url === "/old") res.writeHead(307, { location: "/new" }).end();
    else res.writeHead(200).end(`at ${req.url}`);
  });
  try {
    const response = await httpFetch(`${server.url}/old`);
    assert.equal(await response.text(), "at /new");
  } finally {
    server.close();
  }
});
