// `agentcraft proxy <name>` (spec 003 §7): what an editor spawns as its ACP agent.
// Direct Bridge (default): the proxy spawns the instance's agent itself (cwd = its workspace),
// registers the pid with agent.attach, and pipes bytes both ways; an occupied instance gets an
// ephemeral copy. Session Lease (--lease): the daemon's running agent serves a leased session,
// ACP on this side translated to the session.* methods, updates streamed as they come.
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";
import { RpcError } from "../../rpc/errors.js";
import { VERSION } from "../../version.js";
import { callOnce, DaemonClient, describeError } from "./client.js";

const AGENT_NOT_FOUND = -32003;

/** The instance this proxy may use: the named one when free, else an ephemeral copy (1 instance : 1 process). */
async function freeInstance(socketPath: string, name: string, template?: string): Promise<{ name: string; ephemeral: boolean }> {
  let status;
  try {
    status = await callOnce(socketPath, "agent.status", { name });
  } catch (error) {
    if (!(error instanceof RpcError && error.code === AGENT_NOT_FOUND && template)) throw error;
    await callOnce(socketPath, "agent.create", { name, template });
    return { name, ephemeral: false };
  }
  if (status.status !== "running" && status.status !== "starting") return { name, ephemeral: false };
  const copy = `${name}-${process.pid.toString(36)}${Date.now().toString(36).slice(-4)}`;
  await callOnce(socketPath, "agent.create", {
    name: copy,
    template: status.templateName,
    overrides: { workspacePolicy: "ephemeral", launchMode: status.launchMode },
  });
  return { name: copy, ephemeral: true };
}

export async function directBridge(socketPath: string, name: string, template?: string): Promise<number> {
  const instance = await freeInstance(socketPath, name, template);
  const resolved = await callOnce(socketPath, "agent.resolve", { name: instance.name });
  const child = spawn(resolved.command, resolved.args, {
    cwd: resolved.workspaceDir,
    env: { ...process.env, ...resolved.env },
    stdio: ["pipe", "pipe", "inherit"],
  });
  const spawned = await new Promise<boolean>((resolve) => {
    child.once("spawn", () => resolve(true));
    child.once("error", (error) => {
      process.stderr.write(`agentcraft: cannot start ${resolved.command}: ${error.message}\n`);
      resolve(false);
    });
  });
  if (!spawned || child.pid === undefined) {
    if (instance.ephemeral) await callOnce(socketPath, "agent.destroy", { name: instance.name, force: true }).catch(() => undefined);
    return 1;
  }
  await callOnce(socketPath, "agent.attach", { name: instance.name, pid: child.pid, metadata: { proxy: String(process.pid) } });
  process.stdin.pipe(child.stdin);
  child.stdout.pipe(process.stdout);
  // The editor closing our stdin ends the session: the agent is terminated, then detached.
  process.stdin.once("end", () => child.kill("SIGTERM"));
  const code = await new Promise<number>((resolve) => child.once("exit", (c, signal) => resolve(c ?? (signal ? 0 : 1))));
  await callOnce(socketPath, "agent.detach", { name: instance.name, cleanup: instance.ephemeral }).catch((error: unknown) =>
    process.stderr.write(`agentcraft: could not detach ${instance.name}: ${describeError(error)}\n`),
  );
  return code;
}

export async function leaseProxy(socketPath: string, name: string, template?: string): Promise<number> {
  let ide: acp.AgentContext | undefined;
  const daemon = await DaemonClient.connect(socketPath, {
    onNotification: (method, params) => {
      if (method !== "session.update" || !ide) return;
      const { sessionId, update } = params as { sessionId: string; update: acp.SessionUpdate };
      void ide.notify(acp.methods.client.session.update, { sessionId, update }).catch(() => undefined);
    },
    onRequest: async (method, params) => {
      if (method !== "session.requestPermission" || !ide) throw new RpcError(-32601, `Method not found: ${method}`);
      return ide.request(acp.methods.client.session.requestPermission, params as acp.RequestPermissionRequest);
    },
  });
  const status = await daemon.call("agent.status", { name }).catch(async (error: unknown) => {
    if (!(error instanceof RpcError && error.code === AGENT_NOT_FOUND && template)) throw error;
    return daemon.call("agent.create", { name, template });
  });
  const running = status.processOwnership === "managed" ? status : await daemon.call("agent.start", { name });
  // The running agent's own capabilities, less what a lease cannot carry (loading old sessions).
  const cached = (running.agentCapabilities ?? {}) as acp.AgentCapabilities;

  const app = acp
    .agent({ name: "agentcraft-proxy" })
    .onRequest(acp.methods.agent.initialize, () => ({
      protocolVersion: acp.PROTOCOL_VERSION,
      // Prompts travel as text (session.prompt); old sessions cannot be loaded through a lease.
      agentCapabilities: {
        ...cached,
        loadSession: false,
        sessionCapabilities: {},
        promptCapabilities: { image: false, audio: false, embeddedContext: false },
      },
      agentInfo: { name: `agentcraft:${name}`, title: `AgentCraft agent ${name}`, version: VERSION },
      authMethods: [],
    }))
    .onRequest(acp.methods.agent.session.new, async () => {
      // One client id per agent and user: an editor that reconnects resumes its idle session.
      const lease = await daemon.call("session.create", { agentName: name, clientId: `proxy:${name}` });
      return { sessionId: lease.sessionId };
    })
    .onRequest(acp.methods.agent.session.prompt, async ({ params }) => {
      const text = params.prompt
        .map((block) => (block.type === "text" ? block.text : block.type === "resource_link" ? block.uri : ""))
        .filter(Boolean)
        .join("\n");
      const result = await daemon.call("session.prompt", { sessionId: params.sessionId, text });
      return { stopReason: result.stopReason === "cancelled" ? "cancelled" : "end_turn" };
    })
    .onNotification(acp.methods.agent.session.cancel, async ({ params }) => {
      await daemon.call("session.cancel", { sessionId: params.sessionId }).catch(() => undefined);
    });
  const stream = acp.ndJsonStream(
    Writable.toWeb(process.stdout) as WritableStream<Uint8Array>,
    Readable.toWeb(process.stdin) as ReadableStream<Uint8Array>,
  );
  const connection = app.connect(stream);
  ide = connection.client;
  await connection.closed;
  // Leases go idle when this connection closes; the agent keeps running for the next client.
  daemon.close();
  return 0;
}
