// The small HTTP endpoints of the Hub and the webhook channel speak JSON: reading a bounded
// request body, and answering with a status and a JSON body.
import type http from "node:http";

export function sendJson(res: http.ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body));
}

/** The request's body as text; throws past `limit` characters. */
export async function readBody(req: http.IncomingMessage, limit: number): Promise<string> {
  let text = "";
  for await (const chunk of req) {
    text += String(chunk);
    if (text.length > limit) throw new Error("The request body is too large.");
  }
  return text;
}
