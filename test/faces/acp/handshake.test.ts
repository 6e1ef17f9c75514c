// The ACP face's early answer to initialize (before the SDK loads) against the SDK's own: the
// check it makes is never looser than the SDK's schema, its answer is the SDK's, and a server
// that answered early answers that request once and serves what follows.
import assert from "node:assert/strict";
import { PassThrough } from "node:stream";
import { describe, it } from "node:test";
import * as acp from "@agentclientprotocol/sdk";
import { ACP_PROTOCOL_VERSION, initializeResult, plainInitializeId } from "../../../src/faces/acp/handshake.js";
import { serveAcpStream } from "../../../src/faces/acp/session.js";
import type { RuntimeApi } from "../../../src/runtime/api.js";
import { silentLogger } from "../../../src/log.js";
import { ServerProcess, tempDir } from "../../support/server-process.js";

/** The SDK's answer to one initialize request, on a connection of its own (no runtime needed). */
async function sdkAnswer(params: unknown): Promise<{ result?: unknown; error?: unknown }> {
  const [input, output] = [new PassThrough(), new PassThrough()];
  void serveAcpStream({ runtime: new Promise<RuntimeApi>(() => {}), log: silentLogger, serverVersion: "9.9.9", input, output });
  const line = new Promise<string>((resolve) => {
    let text = "";
    output.on("data", (chunk: Buffer) => {
      text += chunk.toString("utf8");
      if (text.includes("\n")) resolve(text.slice(0, text.indexOf("\n")));
    });
  });
  input.write(`${JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params })}\n`);
  const answer = JSON.parse(await line) as { result?: unknown; error?: unknown };
  input.end();
  return answer;
}

const plain = [
  { protocolVersion: 1 },
  { protocolVersion: 0 },
  { protocolVersion: 65535, clientCapabilities: {} },
  {
    protocolVersion: 1,
    clientCapabilities: { fs: { readTextFile: true, writeTextFile: true }, terminal: true },
    clientInfo: { name: "zed", version: "0.201.0" },
  },
  { protocolVersion: 1, clientCapabilities: { fs: {} }, clientInfo: { name: "x", title: "X", version: "1" } },
];
const notPlain = [
  { protocolVersion: 1, _meta: {} },
  { protocolVersion: "1" },
  { protocolVersion: 1.5 },
  { protocolVersion: 70000 },
  { clientCapabilities: {} },
  { protocolVersion: 1, clientCapabilities: { fs: { readTextFile: "yes" } } },
  { protocolVersion: 1, clientCapabilities: { auth: { terminal: true } } },
  { protocolVersion: 1, clientInfo: { name: "x" } },
  { protocolVersion: 1, clientInfo: { name: "x", version: "1", title: null } },
  [1],
  null,
];

describe("ACP handshake", () => {
  it("is the SDK's protocol version", () => assert.equal(ACP_PROTOCOL_VERSION, acp.PROTOCOL_VERSION));

  it("takes plain initialize params only, each of which the SDK accepts and answers as the early answer does", async () => {
    for (const params of plain) {
      const line = JSON.stringify({ jsonrpc: "2.0", id: 7, method: "initialize", params });
      assert.equal(plainInitializeId(line), 7, line);
      assert.deepEqual(await sdkAnswer(params), { jsonrpc: "2.0", id: 1, result: initializeResult("9.9.9") }, line);
    }
    for (const params of notPlain) {
      assert.equal(
        plainInitializeId(JSON.stringify({ jsonrpc: "2.0", id: 7, method: "initialize", params })),
        undefined,
        JSON.stringify(params),
      );
    }
    for (const line of [
      '{"jsonrpc":"2.0","id":7,"method":"session/new","params":{}}',
      '{"id":7,"method":"initialize","params":{"protocolVersion":1}}',
      "{not json",
    ]) {
      assert.equal(plainInitializeId(line), undefined, line);
    }
  });

  it("a server that answered initialize early answers it once and serves the requests after it", async () => {
    const server = ServerProcess.spawn({ command: "acp", env: { SWITCHYARD_LOG_LEVEL: "warn" } });
    try {
      const lines: Array<{ id?: unknown; result?: unknown; error?: unknown }> = [];
      let text = "";
      const sessionAnswered = new Promise<void>((resolve) =>
        server.child.stdout.on("data", (chunk: Buffer) => {
          text += chunk.toString("utf8");
          for (let newline = text.indexOf("\n"); newline >= 0; newline = text.indexOf("\n")) {
            lines.push(JSON.parse(text.slice(0, newline)) as (typeof lines)[number]);
            text = text.slice(newline + 1);
            if (lines.some((m) => m.id === 2)) resolve();
          }
        }),
      );
      // Both in one write, as a client that does not wait for the answer sends them.
      server.child.stdin.write(
        `${JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: 1 } })}\n` +
          `${JSON.stringify({ jsonrpc: "2.0", id: 2, method: "session/new", params: { cwd: tempDir("acp-ws"), mcpServers: [] } })}\n`,
      );
      await sessionAnswered;
      assert.deepEqual(
        lines.filter((m) => m.id === 1),
        [{ jsonrpc: "2.0", id: 1, result: initializeResult((lines[0]!.result as { agentInfo: { version: string } }).agentInfo.version) }],
      );
      const session = lines.find((m) => m.id === 2)!;
      assert.equal(session.error, undefined, JSON.stringify(session.error));
      assert.match((session.result as { sessionId: string }).sessionId, /^thread_/);
    } finally {
      server.child.stdin.end();
      await server.exited;
    }
  });
});
