// The ACP face: Switchyard's runtime served as an Agent Client Protocol agent, over a
// newline-delimited JSON byte stream (the process's stdin/stdout for `switchyard acp`). It uses
// the official SDK; the protocol types are the SDK's own, so it has no table here. Loaded on
// use, after a plain initialize waiting on the stream has been answered (handshake.ts).
import type { Face } from "../face.js";
import { answerInitializeEarly } from "./handshake.js";

export const acpFace: Face = {
  name: "acp",
  serveStream: async (ctx) => {
    const streams = await answerInitializeEarly(ctx.input, ctx.output, ctx.serverVersion, ctx.serving);
    return (await import("./session.js")).serveAcpStream({ ...ctx, ...streams });
  },
};
