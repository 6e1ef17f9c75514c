// `agentcraft mcp`: AgentCraft's agent management as MCP tools on stdio (spec 003 §8), so another
// agent can create, run, prompt and inspect agents. Each tool is one daemon call; a failure is a
// tool error whose text carries the AgentCraft error code.
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { z } from "zod";
import { VERSION } from "../../version.js";
import { callOnce, type Method, type Params, describeError } from "./client.js";

type ToolResult = { content: Array<{ type: "text"; text: string }>; isError?: boolean };

export function createMcpServer(socketPath: string): McpServer {
  const server = new McpServer({ name: "agentcraft", version: VERSION });
  const tool = async <M extends Method>(
    method: M,
    params: Params<M>,
    shape: (result: unknown) => unknown = (r) => r,
  ): Promise<ToolResult> => {
    try {
      const result = shape(await callOnce(socketPath, method, params));
      return { content: [{ type: "text", text: JSON.stringify(result, null, 2) }] };
    } catch (error) {
      return { content: [{ type: "text", text: describeError(error) }], isError: true };
    }
  };
  server.registerTool(
    "agentcraft_run_agent",
    {
      description: "Create an ephemeral agent from a template, give it a task, and return its answer (the agent is cleaned up after).",
      inputSchema: { template: z.string().describe("template name"), prompt: z.string().describe("the task") },
    },
    ({ template, prompt }) =>
      tool("agent.run", { template, prompt }, (r) => {
        const { response, artifacts } = r as { response: string; artifacts: string[] };
        return { response, artifacts };
      }),
  );
  server.registerTool(
    "agentcraft_prompt_agent",
    {
      description: "Send a message to a started (persistent) agent and return its answer and session id.",
      inputSchema: { name: z.string(), message: z.string(), sessionId: z.string().optional().describe("continue this session") },
    },
    ({ name, message, sessionId }) => tool("agent.prompt", { name, message, ...(sessionId ? { sessionId } : {}) }),
  );
  server.registerTool(
    "agentcraft_agent_status",
    { description: "An agent instance's metadata and status.", inputSchema: { name: z.string() } },
    ({ name }) => tool("agent.status", { name }),
  );
  server.registerTool(
    "agentcraft_create_agent",
    {
      description: "Create an agent instance from a template, without starting it.",
      inputSchema: { name: z.string(), template: z.string() },
    },
    ({ name, template }) =>
      tool("agent.create", { name, template }, (r) => {
        const { name: created, workspaceDir, status } = r as { name: string; workspaceDir: string; status: string };
        return { name: created, workspaceDir, status };
      }),
  );
  server.registerTool("agentcraft_list_agents", { description: "Every agent instance with its status.", inputSchema: {} }, () =>
    tool("agent.list", {}),
  );
  return server;
}

export async function serveMcp(socketPath: string): Promise<void> {
  const server = createMcpServer(socketPath);
  await server.connect(new StdioServerTransport());
  await new Promise<void>((resolve) => {
    server.server.onclose = resolve;
    process.stdin.once("end", () => void server.close());
  });
}
