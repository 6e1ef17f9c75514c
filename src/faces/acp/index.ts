// The ACP face: Switchyard's runtime served as an Agent Client Protocol agent, over a
// newline-delimited JSON byte stream (the process's stdin/stdout for `switchyard acp`). It uses
// the official SDK; the protocol types are the SDK's own, so it has no table here. Loaded on use.
import type { Face } from "../face.js";

export const acpFace: Face = {
  name: "acp",
  serveStream: async (ctx) => (await import("./session.js")).serveAcpStream(ctx),
};
