// The Codex app-server dialect: the v2 JSON-RPC that Codex's own clients (its terminal UI with
// --remote, editor extensions, SDKs that spawn `codex app-server`) speak, over the same runtime
// as every other face. Its clients leave "jsonrpc" out of their messages; a connection whose
// first request does, or whose initialize has Codex's shape, chooses this face. Loaded on first use.
import { lazyFace, type Face } from "../face.js";
import { codexInitializeResult, isPlainCodexInitialize } from "./handshake.js";

export const codexFace: Face = {
  name: "codex",
  claims: (params, peer) => peer.omitsJsonrpc || isCodexInitialize(params),
  peersOmitJsonrpc: true,
  answerEarly: (params, { serverVersion }) => (isPlainCodexInitialize(params) ? codexInitializeResult(serverVersion) : undefined),
  ...lazyFace("codex", async () => {
    const { CodexSession } = await import("./session.js");
    return ({ runtime, connection, log, serverVersion }) => new CodexSession(runtime, connection, serverVersion, log);
  }),
  protocol: async () => (await import("./protocol.js")).codexProtocol,
};

/**
 * Codex's initialize, for a client that does send "jsonrpc": `capabilities` null or with Codex's
 * own flags, or a `clientInfo.title` of null. The AppServer protocol allows none of these.
 */
function isCodexInitialize(params: unknown): boolean {
  if (typeof params !== "object" || params === null || !("clientInfo" in params)) return false;
  const { clientInfo, capabilities } = params as { clientInfo?: { title?: unknown }; capabilities?: unknown };
  if (capabilities === null || clientInfo?.title === null) return true;
  return typeof capabilities === "object" && capabilities !== undefined && "experimentalApi" in capabilities;
}
