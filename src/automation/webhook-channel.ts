// The webhook channel adapter, which needs nothing but HTTP: a bot or bridge POSTs a chat's
// message to the channel's loopback port, and the agent's reply is POSTed to its outboundUrl.
//
//   in:  POST http://127.0.0.1:<port>/  {chatId, text, userId?}   (Authorization: Bearer <secret>)
//        -> 202 {threadId}
//   out: POST <outboundUrl>  {channel, chatId, threadId, turnId, text, error}
import http from "node:http";
import { bearerToken, sameSecret } from "../bearer.js";
import { readBody, sendJson as reply } from "../http-json.js";
import type { ChannelAdapter, ChannelContext } from "./channels.js";

export const webhookAdapter: ChannelAdapter = {
  transport: "webhook",
  async start(channel) {
    const { config, log } = channel;
    const secret = config.secretEnvVar ? channel.env[config.secretEnvVar] : undefined;
    const server = http.createServer((req, res) => {
      receive(channel, secret, req, res).catch((error: unknown) => {
        log.error({ err: error }, "webhook message failed");
        if (!res.headersSent) reply(res, 500, { error: "internal error" });
      });
    });
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(config.port, "127.0.0.1", resolve);
    });
    log.info({ port: config.port }, "webhook channel listening");
    return () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      });
  },
};

async function receive(
  channel: ChannelContext,
  secret: string | undefined,
  req: http.IncomingMessage,
  res: http.ServerResponse,
): Promise<void> {
  if (req.method !== "POST") return reply(res, 405, { error: "POST a message: {chatId, text, userId?}" });
  const given = bearerToken(req.headers.authorization);
  if (secret !== undefined && !(given && sameSecret(given, secret))) return reply(res, 401, { error: "Missing or invalid token." });
  let message: { chatId?: unknown; text?: unknown; userId?: unknown };
  try {
    message = JSON.parse(await readBody(req, 1024 * 1024)) as typeof message;
  } catch {
    return reply(res, 400, { error: "The body must be JSON: {chatId, text, userId?}." });
  }
  const { chatId, text, userId } = message;
  if (typeof chatId !== "string" || !chatId || typeof text !== "string" || !text)
    return reply(res, 400, { error: "chatId and text are required strings." });
  const { threadId, reply: answer } = await channel.receive({ chatId, text, ...(typeof userId === "string" ? { userId } : {}) });
  reply(res, 202, { threadId });
  const outcome = await answer;
  await fetch(channel.config.outboundUrl!, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      channel: channel.config.name,
      chatId,
      threadId,
      turnId: outcome.turnId,
      text: outcome.text,
      error: outcome.error,
    }),
  }).catch((error: unknown) => channel.log.warn({ err: error }, "webhook reply not delivered"));
}
