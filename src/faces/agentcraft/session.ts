// One AgentCraft connection: every method of spec 003 §3, validated by the protocol table and
// answered by the agent manager, the catalog and the lease registry.
import type { RpcConnection, RpcHandlers } from "../../rpc/connection.js";
import { dispatchRequests } from "../../rpc/methods.js";
import type { RequestHandlers } from "../../rpc/protocol-table.js";
import type { Logger } from "../../log.js";
import { AgentCraftError, toRpcError } from "./errors.js";
import { readTemplateFile, type ComponentKind } from "./home.js";
import type { LeaseHolder, LeaseRegistry } from "./leases.js";
import type { AgentManager } from "./manager.js";
import { AgentCraftRequests } from "./protocol.js";

export interface DaemonServices {
  manager: AgentManager;
  leases: LeaseRegistry;
  version: string;
  log: Logger;
  shutdown(): void;
}

export function openConnection(connection: RpcConnection, services: DaemonServices): RpcHandlers {
  const { manager, leases } = services;
  const catalog = manager.catalog;
  const holder: LeaseHolder = {
    id: connection.id,
    update: (sessionId, update) => connection.notify("session.update", { sessionId, update }),
    requestPermission: (params, signal) =>
      connection.request<{ outcome: unknown }>("session.requestPermission", params, { signal, timeoutMs: 0 }),
  };
  connection.onClose(() => leases.released(holder));

  const component = <K extends ComponentKind>(kind: K) => ({
    list: () => catalog.list(kind),
    get: ({ name }: { name: string }) => catalog.get(kind, name),
  });
  const skills = component("skill");
  const prompts = component("prompt");
  const mcp = component("mcp");
  const workflows = component("workflow");

  const handlers: RequestHandlers<typeof AgentCraftRequests> = {
    "template.list": () => catalog.listTemplates(),
    "template.get": ({ name }) => catalog.template(name),
    "template.load": ({ filePath }) => catalog.loadTemplate(filePath),
    "template.unload": ({ name }) => ({ success: catalog.unloadTemplate(name) }),
    "template.validate": ({ filePath }) => {
      const read = readTemplateFile(filePath);
      return "template" in read ? { valid: true, template: read.template } : { valid: false, errors: read.errors };
    },
    "agent.create": ({ name, template, overrides }) => manager.create(name, template, overrides),
    "agent.start": ({ name }) => manager.start(name),
    "agent.stop": async ({ name }) => {
      await leases.endAll(name);
      return manager.stop(name);
    },
    "agent.destroy": async ({ name, force }) => {
      await leases.endAll(name);
      await manager.destroy(name, force);
      return { success: true };
    },
    "agent.status": ({ name }) => manager.instances.get(name),
    "agent.list": () => manager.instances.list(),
    "agent.resolve": ({ name, template, overrides }) => manager.resolve(name, template, overrides ?? {}),
    "agent.attach": ({ name, pid, metadata }) => manager.attach(name, pid, metadata),
    "agent.detach": ({ name, cleanup }) => manager.detach(name, cleanup),
    "agent.run": (params) =>
      "template" in params
        ? manager.runTemplate(params.template, params.prompt, params.cleanup)
        : manager.runOnInstance(params.name, params.prompt, params.options),
    "agent.prompt": ({ name, message, sessionId }) => manager.prompt(name, message, sessionId),
    "skill.list": skills.list,
    "skill.get": skills.get,
    "prompt.list": prompts.list,
    "prompt.get": prompts.get,
    "mcp.list": mcp.list,
    "mcp.get": mcp.get,
    "workflow.list": workflows.list,
    "workflow.get": workflows.get,
    "session.create": ({ agentName, clientId, idleTtlMs }) => leases.create(agentName, clientId, holder, idleTtlMs),
    "session.prompt": ({ sessionId, text }) => leases.prompt(sessionId, text, holder),
    "session.cancel": async ({ sessionId }) => {
      await leases.cancel(sessionId, holder);
      return { ok: true };
    },
    "session.close": async ({ sessionId }) => {
      await leases.close(sessionId, holder);
      return { ok: true };
    },
    "session.list": ({ agentName }) => leases.list(agentName),
    // Legacy proxy (§3.7): a lease opened and driven with ACP-shaped messages.
    "proxy.connect": ({ agentName }) => {
      const info = leases.create(agentName, `proxy:${connection.id}`, holder);
      return { sessionId: info.sessionId, agentName };
    },
    "proxy.disconnect": async ({ sessionId }) => {
      await leases.close(sessionId, holder);
      return { ok: true };
    },
    "proxy.forward": async ({ sessionId, acpMessage }) => {
      const method = acpMessage.method;
      if (method === "session/cancel") {
        await leases.cancel(sessionId, holder);
        return { jsonrpc: "2.0", id: acpMessage.id ?? null, result: null };
      }
      if (method !== "session/prompt") {
        throw new AgentCraftError("GENERIC_BUSINESS", `proxy.forward carries session/prompt and session/cancel, not ${String(method)}.`, {
          method,
        });
      }
      const blocks = ((acpMessage.params as { prompt?: Array<{ type?: string; text?: string }> } | undefined)?.prompt ?? []).filter(
        (b) => b.type === "text",
      );
      const { stopReason } = await leases.prompt(sessionId, blocks.map((b) => b.text ?? "").join("\n"), holder);
      return { jsonrpc: "2.0", id: acpMessage.id ?? null, result: { stopReason } };
    },
    "proxy.envCallback": () => {
      throw new AgentCraftError("GENERIC_BUSINESS", "proxy.envCallback is not implemented (environment passthrough is not supported).");
    },
    "daemon.ping": () => manager.ping(services.version),
    "daemon.shutdown": () => {
      // After the answer is on its way.
      setImmediate(() => services.shutdown());
      return { success: true };
    },
  };
  return { onRequest: dispatchRequests(AgentCraftRequests, handlers, toRpcError) };
}
