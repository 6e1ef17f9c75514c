// A real MCP server (the SDK's McpServer) for tests: stdio when run as a program, or Streamable
// HTTP inside the test process (startHttpMcpServer). Tools: add, whoami (an environment
// variable), crash (exits the stdio process, to test restarts).
import http from "node:http";
import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { z } from "zod";

/** The path of this file compiled, to run as `node <path>`. */
export const FAKE_MCP_SERVER = fileURLToPath(import.meta.url);

function createServer(): McpServer {
  const server = new McpServer({ name: "fake-mcp", version: "1.0.0" });
  server.registerTool("add", { description: "Adds two numbers.", inputSchema: { a: z.number(), b: z.number() } }, ({ a, b }) => ({
    content: [{ type: "text", text: String(a + b) }],
  }));
  server.registerTool("whoami", { description: "Says MCP_TEST_USER." }, () => ({
    content: [{ type: "text", text: process.env.MCP_TEST_USER ?? "(unset)" }],
  }));
  server.registerTool("crash", { description: "Exits the server process." }, () => {
    process.stderr.write("fake-mcp: crashing on request\n");
    process.exit(3);
  });
  return server;
}

/** A Streamable HTTP MCP server on a free loopback port (stateless: one transport per request). */
export async function startHttpMcpServer(): Promise<{ url: string; close(): Promise<void> }> {
  const httpServer = http.createServer(async (req, res) => {
    const server = createServer();
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    res.on("close", () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    let body = "";
    for await (const chunk of req) body += String(chunk);
    await transport.handleRequest(req, res, body ? JSON.parse(body) : undefined);
  });
  await new Promise<void>((resolve) => httpServer.listen(0, "127.0.0.1", resolve));
  const { port } = httpServer.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    close: () =>
      new Promise<void>((resolve) => {
        httpServer.closeAllConnections();
        httpServer.close(() => resolve());
      }),
  };
}

if (process.argv[1] === FAKE_MCP_SERVER) {
  await createServer().connect(new StdioServerTransport());
}
