// The AppServer protocol face: thread/turn/item JSON-RPC, the primary face and the default of a
// connection whose first initialize no other face claims.
import type { Face } from "../face.js";
import { AppServerSession } from "./session.js";

export const appServerFace: Face = {
  name: "appserver",
  claims: (params) => typeof params === "object" && params !== null && "clientInfo" in params,
  open: ({ runtime, connection, log, serverVersion }) =>
    new AppServerSession(runtime, connection, { name: "switchyard", version: serverVersion }, log),
  protocol: async () => (await import("./protocol.js")).appServerProtocol,
};
