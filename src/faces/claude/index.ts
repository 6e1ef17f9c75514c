// The claude-app-server protocol: snake_case JSON-RPC in the vocabulary of Claude content blocks,
// over the same runtime as every other face. Loaded on first use.
import { lazyFace, type Face } from "../face.js";
import { ClaudeErrorCode } from "./errors.js";
import { initializeResult, isPlainInitialize } from "./handshake.js";

export const claudeFace: Face = {
  name: "claude",
  // AppServer's initialize must carry `clientInfo`; every field of this face's is optional. So an
  // initialize without `clientInfo` (`{}` or no params at all included), which the AppServer face
  // would refuse and this one accepts, chooses this face.
  claims: (params) =>
    params === undefined || (typeof params === "object" && params !== null && !Array.isArray(params) && !("clientInfo" in params)),
  // From the model catalog and the tools' names, without the runtime (handshake.ts).
  answerEarly: (params, facts) => (isPlainInitialize(params) ? initializeResult(facts) : undefined),
  ...lazyFace("claude", async () => {
    const { ClaudeSession } = await import("./session.js");
    return ({ runtime, connection, log, serverVersion }) => new ClaudeSession(runtime, connection, serverVersion, log);
  }),
  // -32001 is "thread not found" in this face; the in-flight cap answers with ClaudeErrorCode.Overloaded.
  engineErrorCodes: { overloaded: ClaudeErrorCode.Overloaded },
  protocol: async () => (await import("./protocol.js")).claudeProtocol,
};
