// Shared set-up for end-to-end tests: a fake model server, a workspace, and a spawned server
// with a connected client.
import fs from "node:fs";
import path from "node:path";
import { FakeModelServer } from "./fake-model-server.js";
import { ServerProcess, tempDir, type SpawnOptions } from "./server-process.js";
import { FULL_CAPABILITIES, TestClient } from "./test-client.js";

export interface Harness {
  fake: FakeModelServer;
  server: ServerProcess;
  client: TestClient;
  workspace: string;
  /** Starts a thread in the workspace and returns its id. */
  startThread(params?: Record<string, unknown>): Promise<string>;
  close(): Promise<void>;
}

export function modelEnv(fake: FakeModelServer, provider: "openai-chat" | "anthropic" = "openai-chat"): Record<string, string> {
  return provider === "openai-chat"
    ? { OPENAI_BASE_URL: fake.openaiBaseURL, OPENAI_API_KEY: "test-key" }
    : { ANTHROPIC_BASE_URL: fake.anthropicBaseURL, ANTHROPIC_API_KEY: "test-key" };
}

export function makeWorkspace(files: Record<string, string> = {}): string {
  const dir = tempDir("ws");
  for (const [name, content] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
    fs.writeFileSync(path.join(dir, name), content);
  }
  return dir;
}

export function threadStartParams(workspace: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    identity: { channelName: "test", userId: "tester", channelContext: `workspace:${workspace}`, workspacePath: workspace },
    historyMode: "server",
    ...extra,
  };
}

/** A server over stdio with an initialized client. */
export async function startHarness(
  opts: SpawnOptions & { capabilities?: Record<string, unknown>; fake?: FakeModelServer; files?: Record<string, string> } = {},
): Promise<Harness> {
  const fake = opts.fake ?? (await FakeModelServer.start());
  const workspace = makeWorkspace(opts.files);
  const server = ServerProcess.spawn({ ...opts, env: { ...modelEnv(fake), ...opts.env } });
  const client = TestClient.overStdio(server.child);
  await client.initialize(opts.capabilities ?? FULL_CAPABILITIES);
  return {
    fake,
    server,
    client,
    workspace,
    async startThread(params = {}) {
      const result = await client.call("thread/start", threadStartParams(workspace, params));
      return (result.thread as { id: string }).id;
    },
    async close() {
      client.close();
      await server.kill();
      if (!opts.fake) await fake.close();
    },
  };
}

export function text(message: string): Array<{ type: "text"; text: string }> {
  return [{ type: "text", text: message }];
}
