// The claude-app-server dialect (spec 004): snake_case JSON-RPC in the vocabulary of Claude
// content blocks, over the same runtime as every other face.
import type { Face } from "../face.js";
import { ClaudeSession } from "./session.js";

export const claudeFace: Face = {
  name: "claude",
  // Its initialize carries `client`, `cwd` or `permission_mode`; AppServer's carries `clientInfo`.
  claims: (params) =>
    typeof params === "object" &&
    params !== null &&
    !("clientInfo" in params) &&
    ("client" in params || "cwd" in params || "permission_mode" in params),
  open: ({ runtime, connection, log, serverVersion }) => new ClaudeSession(runtime, connection, serverVersion, log),
};
