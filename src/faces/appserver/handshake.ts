// AppServer's answer to initialize, apart from the session: a stdio client's first request is
// answered before the runtime (store, protocol tables, zod) has loaded. See Face.answerEarly.
import { isObject, optional } from "../plain-params.js";

/** The method families this server has; those it does not have yet are reported false. */
const SERVER_CAPABILITIES = {
  threadManagement: true,
  threadSubscriptions: true,
  approvalFlow: true,
  historyReplay: true,
  turnQueue: true,
  turnSteering: true,
  modelCatalogManagement: true,
  skillsManagement: true,
  skillVariants: true,
  pluginManagement: true,
  mcpManagement: true,
  mcpStatus: true,
  cronManagement: true,
  heartbeatManagement: true,
  commandManagement: true,
  externalChannelManagement: true,
  subagentManagement: true,
  subAgentManagement: true,
  workspaceConfigManagement: true,
};

export function initializeResult(serverVersion: string): {
  serverInfo: { name: string; version: string; protocolVersion: string; extensions: string[] };
  capabilities: Record<string, boolean>;
} {
  return {
    serverInfo: { name: "switchyard", version: serverVersion, protocolVersion: "1", extensions: [] },
    capabilities: SERVER_CAPABILITIES,
  };
}

/** The boolean capabilities of the table's ClientCapabilities (a test holds the two lists together). */
export const CAPABILITY_FLAGS = [
  "approvalSupport",
  "streamingSupport",
  "commandExecutionStreaming",
  "toolExecutionLifecycle",
  "configChange",
];

/**
 * Whether `params` are initialize params of the plain shape clients send, which the protocol
 * table's schema certainly accepts. Anything else waits for that schema (and its -32602), so this
 * check may be stricter than the schema but never looser: test/faces/appserver/handshake.test.ts holds
 * the two together.
 */
export function isPlainInitialize(params: unknown): boolean {
  if (!isObject(params) || !isObject(params.clientInfo) || typeof params.clientInfo.name !== "string") return false;
  if (!optional(params.clientInfo.title, "string") || !optional(params.clientInfo.version, "string")) return false;
  const caps = params.capabilities;
  if (caps === undefined) return true;
  if (!isObject(caps) || !CAPABILITY_FLAGS.every((flag) => optional(caps[flag], "boolean"))) return false;
  const optOut = caps.optOutNotificationMethods;
  return optOut === undefined || (Array.isArray(optOut) && optOut.every((method) => typeof method === "string"));
}
