// The AgentCraft face (spec 003): a daemon on a Unix socket that manages agent templates and
// instances; the agents it starts run as runtime threads, visible from every face. Its CLI,
// ACP proxy and MCP server are clients of the socket (src/cli/agentcraft). Loaded on use.
import type { Face } from "../face.js";

export const agentCraftFace: Face = {
  name: "agentcraft",
  listen: async (ctx) => (await import("./daemon.js")).startDaemon(ctx),
  protocol: async () => (await import("./protocol.js")).agentCraftProtocol,
};
