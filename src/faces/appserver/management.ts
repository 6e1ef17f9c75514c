// AppServer protocol, the management families' handlers: skills and custom commands of a
// workspace, straight onto the runtime's workspace resources.
import type { RequestHandlers } from "../../rpc/protocol-table.js";
import type { RuntimeApi } from "../../runtime/api.js";
import type { WireThread } from "./protocol.js";
import type { ManagementRequests } from "./management-protocol.js";

export function managementHandlers(
  rt: RuntimeApi,
  /** The wire form of a thread, as the session sends it everywhere. */
  wireThread: (threadId: string) => Promise<WireThread>,
  /** Subscribes the connection to a thread it starts a turn on, as turn/start does. */
  follow: (threadId: string) => void,
): RequestHandlers<typeof ManagementRequests> {
  const { skills, commands, mcp, subagents, defaults, channels, plugins } = rt.workspace;
  const workspaceConfig = (values: ReturnType<typeof defaults.read>) => ({
    providerId: values.provider ?? null,
    model: values.model ?? null,
    defaultApprovalPolicy: values.defaultApprovalPolicy ?? null,
  });
  const { cron, heartbeat } = rt.automation;
  const editable = <T extends object>(server: T) => ({ ...server, origin: { kind: "workspace" as const }, readOnly: false });
  // A DotCraft server serves the workspace it was started in; Switchyard serves any, by path.
  const ws = (workspacePath: string | undefined): string => workspacePath ?? process.cwd();
  return {
    "skills/list": ({ workspacePath, includeUnavailable }) => ({
      skills: skills.list(ws(workspacePath), includeUnavailable === undefined ? {} : { includeUnavailable }),
    }),
    "skills/read": ({ workspacePath, name }) => skills.read(ws(workspacePath), name),
    "skills/view": ({ workspacePath, name }) => skills.view(ws(workspacePath), name),
    "skills/restoreOriginal": ({ workspacePath, name }) => skills.restoreOriginal(ws(workspacePath), name),
    "skills/setEnabled": ({ workspacePath, name, enabled }) => ({ skill: skills.setEnabled(ws(workspacePath), name, enabled) }),
    "skills/uninstall": ({ workspacePath, name }) => {
      const result = skills.uninstall(ws(workspacePath), name);
      return { ...result, source: result.source === "workspace" ? "workspace" : "user" };
    },
    "plugin/list": ({ workspacePath, includeDisabled }) => ({
      plugins: plugins.list(ws(workspacePath), includeDisabled === undefined ? {} : { includeDisabled }),
      diagnostics: [],
    }),
    "plugin/view": ({ workspacePath, id }) => ({ plugin: plugins.view(ws(workspacePath), id) }),
    "plugin/install": ({ workspacePath, id }) => ({ plugin: plugins.install(ws(workspacePath), id) }),
    "plugin/remove": ({ workspacePath, id }) => ({ plugin: plugins.remove(ws(workspacePath), id) }),
    "plugin/setEnabled": ({ workspacePath, id, enabled }) => ({ plugin: plugins.setEnabled(ws(workspacePath), id, enabled) }),
    "externalChannel/list": ({ workspacePath }) => ({ channels: channels.list(ws(workspacePath)) }),
    "externalChannel/get": ({ workspacePath, name }) => ({ channel: channels.get(ws(workspacePath), name) }),
    "externalChannel/upsert": ({ workspacePath, channel }) => ({ channel: channels.upsert(ws(workspacePath), channel) }),
    "externalChannel/remove": ({ workspacePath, name }) => {
      channels.remove(ws(workspacePath), name);
      return { removed: true };
    },
    "workspace/config/schema": () => ({
      sections: [
        {
          section: "Core",
          order: 0,
          path: null,
          // Read by every turn: a change applies to the next turn, without a restart.
          fields: [
            { key: "ProviderId", type: "string", reload: "immediate" },
            { key: "Model", type: "string", reload: "immediate" },
            { key: "DefaultApprovalPolicy", type: "string", reload: "immediate" },
          ],
        },
      ],
    }),
    "workspace/config/update": ({ workspacePath, providerId, model, defaultApprovalPolicy }) =>
      workspaceConfig(
        defaults.update(ws(workspacePath), {
          ...(providerId !== undefined ? { provider: providerId } : {}),
          ...(model !== undefined ? { model } : {}),
          ...(defaultApprovalPolicy !== undefined ? { defaultApprovalPolicy } : {}),
        }),
      ),
    "subagent/profiles/list": ({ workspacePath }) => subagents.list(ws(workspacePath)),
    "subagent/profiles/upsert": ({ workspacePath, name, definition }) => subagents.upsert(ws(workspacePath), name, definition),
    "subagent/profiles/setEnabled": ({ workspacePath, name, enabled }) => subagents.setEnabled(ws(workspacePath), name, enabled),
    "subagent/profiles/remove": ({ workspacePath, name }) => {
      subagents.remove(ws(workspacePath), name);
      return { removed: true };
    },
    "subagent/settings/update": ({ workspacePath, model }) => subagents.updateSettings(ws(workspacePath), { model: model ?? null }),
    "cron/list": ({ includeDisabled }) => ({ jobs: cron.list(includeDisabled) }),
    "cron/remove": ({ jobId }) => {
      cron.remove(jobId);
      return { removed: true };
    },
    "cron/enable": ({ jobId, enabled }) => ({ job: cron.enable(jobId, enabled) }),
    "cron/run": ({ jobId }) => ({ queued: true, job: cron.run(jobId) }),
    "heartbeat/trigger": ({ workspacePath }) => heartbeat.trigger(ws(workspacePath)),
    "mcp/list": ({ workspacePath }) => ({ servers: mcp.list(ws(workspacePath)).map(editable) }),
    "mcp/get": ({ workspacePath, name }) => ({ server: editable(mcp.get(ws(workspacePath), name)) }),
    "mcp/upsert": ({ workspacePath, server }) => ({ server: editable(mcp.upsert(ws(workspacePath), server)) }),
    "mcp/remove": ({ workspacePath, name }) => {
      mcp.remove(ws(workspacePath), name);
      return { removed: true };
    },
    "mcp/status/list": ({ workspacePath }) => ({ servers: mcp.statuses(ws(workspacePath)) }),
    "mcp/test": ({ workspacePath, server }) => mcp.test(ws(workspacePath), server),
    "command/list": ({ workspacePath, includeBuiltins }) => ({
      commands: commands.list(ws(workspacePath), includeBuiltins === undefined ? {} : { includeBuiltins }),
    }),
    "command/execute": async ({ threadId, command, arguments: args }) => {
      const result = await rt.executeCommand(threadId, command, args);
      if (result.turn || result.queuedInput) follow(threadId);
      const { thread, turn, ...rest } = result;
      return {
        ...rest,
        ...(thread ? { thread: await wireThread(thread.id) } : {}),
        ...(turn ? { turn: { ...turn, items: undefined } } : {}),
      };
    },
  };
}
