// A models endpoint standing for a remote API: an HTTP server on this machine's own non-loopback
// address (the server asks endpoints on loopback as local ones), counting the listings it serves.
// Answers any GET in the shape OpenAI's and Anthropic's GET /v1/models share.
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";

export interface RemoteModelsEndpoint {
  baseURL: string;
  /** How many listings it has served. */
  readonly listings: number;
  close(): Promise<void>;
}

/** Undefined on a machine with no address besides loopback. */
export async function startRemoteModelsEndpoint(models: string[]): Promise<RemoteModelsEndpoint | undefined> {
  const address = Object.values(os.networkInterfaces())
    .flat()
    .find((a) => a && !a.internal && a.family === "IPv4")?.address;
  if (!address) return undefined;
  let listings = 0;
  const server = http.createServer((_req, res) => {
    listings++;
    res.setHeader("content-type", "application/json");
    res.end(JSON.stringify({ data: models.map((id) => ({ id, display_name: id })) }));
  });
  await new Promise<void>((resolve) => server.listen(0, address, resolve));
  return {
    baseURL: `http://${address}:${(server.address() as AddressInfo).port}`,
    get listings() {
      return listings;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
