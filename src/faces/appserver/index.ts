// The AppServer protocol face: thread/turn/item JSON-RPC, the primary face and the default of a
// connection whose first initialize no other face claims.
import { lazyFace, type Face } from "../face.js";
import { initializeResult, isPlainInitialize } from "./handshake.js";

export const appServerFace: Face = {
  name: "appserver",
  // Asked last (faces/index.ts): the claude and codex faces take their clients first.
  claims: (params) => typeof params === "object" && params !== null && "clientInfo" in params,
  answerEarly: (params, { serverVersion }) => (isPlainInitialize(params) ? initializeResult(serverVersion) : undefined),
  ...lazyFace("appserver", async () => {
    const { AppServerSession } = await import("./session.js");
    return ({ runtime, connection, log, serverVersion }) => new AppServerSession(runtime, connection, serverVersion, log);
  }),
  protocol: async () => (await import("./protocol.js")).appServerProtocol,
};
