// The claude dialect's answer to initialize, apart from the session: a stdio client's first
// request is answered before the runtime (store, protocol tables, zod) has loaded, from the model
// catalog and the tools' names alone (Face.answerEarly). The session answers with the same code.
import type { ListedModel } from "../../providers/model-catalog.js";
import type { EarlyFacts } from "../face.js";
import { isObject, optional } from "../plain-params.js";

export const SERVER_NAME = "claude-app-server" as const;

/**
 * The protocol table's request and notification names and permission modes, without loading the
 * table (test/faces/claude/handshake.test.ts holds them to it).
 */
export const REQUEST_METHODS = [
  "initialize",
  "thread/start",
  "thread/resume",
  "thread/fork",
  "turn/start",
  "turn/steer",
  "turn/interrupt",
  "model/list",
  "skills/list",
  "app/list",
  "approval/respond",
];
export const NOTIFICATION_METHODS = [
  "initialized",
  "turn/started",
  "item/progress",
  "item/created",
  "approval/request",
  "turn/completed",
  "turn/error",
];
export const PERMISSION_MODES = ["default", "acceptEdits", "bypassPermissions"] as const;

/** How long initialize waits for the model catalog before answering without it. */
const MODELS_WAIT_MS = 2_000;

/** The original's short names for its models; turn/start accepts them for listed models. */
const ALIASES: Record<string, string[]> = {
  "claude-opus-4-6": ["opus"],
  "claude-sonnet-4-6": ["sonnet"],
  "claude-haiku-4-5": ["haiku"],
};

/** The model id an alias stands for; anything else unchanged. */
export function resolveAlias(model: string): string {
  return Object.entries(ALIASES).find(([, aliases]) => aliases.includes(model))?.[0] ?? model;
}

export interface ClaudeModel {
  id: string;
  name: string;
  aliases: string[];
  display_name: string;
  is_default?: true;
}

/**
 * The models model/list offers: the runtime's catalog, narrowed to the default provider's
 * models, since a turn in this protocol names a model but never a provider.
 */
export function claudeModels(models: ListedModel[]): ClaudeModel[] {
  const provider = models.find((m) => m.isDefault)?.provider;
  return models
    .filter((m) => provider === undefined || m.provider === provider)
    .map((m) => {
      const name = m.displayName ?? m.id;
      return { id: m.id, name, aliases: ALIASES[m.id] ?? [], display_name: name, ...(m.isDefault ? { is_default: true as const } : {}) };
    });
}

/**
 * The answer to initialize, from the runtime's facts or, before it is up, the same facts from
 * their sources (EarlyFacts). Models endpoints on other machines are not asked (their providers'
 * built-in entries are listed, or a listing already fetched); one on this machine (a local Ollama)
 * that is slow to answer must not hold up the handshake either: past MODELS_WAIT_MS the list is
 * left empty. model/list asks every endpoint.
 */
export async function initializeResult(sources: EarlyFacts) {
  return {
    server: { name: SERVER_NAME, version: sources.serverVersion },
    capabilities: {
      threads: ["start" as const, "resume" as const, "fork" as const],
      turns: ["start" as const, "steer" as const, "interrupt" as const],
      models: await modelIds(sources),
      skills: [...sources.toolNames],
      methods: [...REQUEST_METHODS],
      notifications: [...NOTIFICATION_METHODS],
      permission_modes: [...PERMISSION_MODES],
      content_blocks: ["text" as const, "image" as const],
      streaming: true,
      approvals: true,
      thread_fork: true,
      turn_steer: true,
      turn_interrupt: true,
    },
  };
}

async function modelIds({ models, log }: EarlyFacts): Promise<string[]> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), MODELS_WAIT_MS)));
  const listed = models({ askRemote: false }).catch((error: unknown) => {
    log.warn({ err: error }, "could not list models for initialize");
    return [];
  });
  try {
    const found = await Promise.race([listed, late]);
    return found ? claudeModels(found).map((m) => m.id) : [];
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Whether `params` are initialize params of the plain shape clients send, which the protocol
 * table's schema certainly accepts (no params at all count as `{}`). Anything else waits for that
 * schema and its -32602, so this check may be stricter than the schema but never looser.
 */
export function isPlainInitialize(params: unknown): boolean {
  if (params === undefined) return true;
  if (!isObject(params)) return false;
  const { client, cwd, permission_mode: mode } = params;
  if (client !== undefined && (!isObject(client) || typeof client.name !== "string" || !optional(client.version, "string"))) return false;
  if (cwd !== undefined && (typeof cwd !== "string" || cwd === "")) return false;
  return mode === undefined || (PERMISSION_MODES as readonly unknown[]).includes(mode);
}
