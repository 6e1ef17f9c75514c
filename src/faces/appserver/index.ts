// The AppServer protocol face (spec 000): the primary dialect.
import type { Face } from "../face.js";
import { AppServerSession } from "./session.js";

export const appServerFace: Face = {
  name: "appserver",
  claims: (params) => typeof params === "object" && params !== null && "clientInfo" in params,
  open: ({ runtime, connection, log, serverVersion }) =>
    new AppServerSession(runtime, connection, { name: "switchyard", version: serverVersion }, log),
};
