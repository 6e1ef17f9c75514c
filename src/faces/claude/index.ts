// The claude-app-server dialect (spec 004): snake_case JSON-RPC in the vocabulary of Claude
// content blocks, over the same runtime as every other face. Loaded on first use.
import { lazyFace } from "../face.js";

export const claudeFace = lazyFace(
  "claude",
  // Its initialize carries `client`, `cwd` or `permission_mode`; AppServer's carries `clientInfo`.
  (params) =>
    typeof params === "object" &&
    params !== null &&
    !("clientInfo" in params) &&
    ("client" in params || "cwd" in params || "permission_mode" in params),
  async () => {
    const { ClaudeSession } = await import("./session.js");
    return ({ runtime, connection, log, serverVersion }) => new ClaudeSession(runtime, connection, serverVersion, log);
  },
);
