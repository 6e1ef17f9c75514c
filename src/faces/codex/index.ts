// The Codex app-server dialect: the v2 JSON-RPC that Codex's own clients (its terminal UI with
// --remote, editor extensions, SDKs that spawn `codex app-server`) speak, over the same runtime
// as every other face. Its clients leave "jsonrpc" out of their messages; a connection whose
// first request does chooses this face. Loaded on first use.
import { lazyFace, type Face } from "../face.js";

export const codexFace: Face = {
  name: "codex",
  claims: (_params, peer) => peer.omitsJsonrpc,
  peersOmitJsonrpc: true,
  ...lazyFace("codex", async () => {
    const { CodexSession } = await import("./session.js");
    return ({ runtime, connection, log, serverVersion }) => new CodexSession(runtime, connection, serverVersion, log);
  }),
  protocol: async () => (await import("./protocol.js")).codexProtocol,
};
