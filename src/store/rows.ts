// The derived tables' rows as both stores read them, and their conversion to the domain model.
import { RuntimeError } from "../domain/errors.js";
import type { RuntimeEvent } from "../domain/events.js";
import type { AgentMode, HistoryMode, Item, Thread, ThreadStatus, Turn, TurnStatus } from "../domain/model.js";

/** The columns of a thread row, in table order. */
export const THREAD_COLUMNS =
  "id, workspace_path, user_id, origin_channel, channel_context, display_name, status, created_at, " +
  "last_active_at, history_mode, mode, configuration, metadata, queued_inputs, plan, forked_from, backend_session";

export interface EventRow {
  seq: number;
  thread_id: string;
  type: string;
  ts: string;
  data: string;
}

export interface ThreadRow {
  id: string;
  workspace_path: string;
  user_id: string | null;
  origin_channel: string;
  channel_context: string | null;
  display_name: string | null;
  status: string;
  created_at: string;
  last_active_at: string;
  history_mode: string;
  mode: string;
  configuration: string | null;
  metadata: string;
  queued_inputs: string;
  plan: string | null;
  forked_from: string | null;
  backend_session: string | null;
}

export interface TurnRow {
  id: string;
  thread_id: string;
  status: string;
  started_at: string;
  completed_at: string | null;
  token_usage: string | null;
  error: string | null;
  input: string;
  model: string | null;
  cancel_reason: string | null;
  diff: string | null;
}

export type ItemParams = { id: string; thread_id: string; turn_id: string; ord: number; type: string; data: string };

// ---------------------------------------------------------------------------------------------
// Row -> model conversion. Optional properties that are NULL are omitted, not set to null.

export const parse = <T>(text: string): T => JSON.parse(text) as T;
export const jsonOrNull = (value: unknown): string | null => (value === undefined || value === null ? null : JSON.stringify(value));

export function toThread(r: ThreadRow): Thread {
  const t: Thread = {
    id: r.id,
    workspacePath: r.workspace_path,
    originChannel: r.origin_channel,
    status: r.status as ThreadStatus,
    createdAt: r.created_at,
    lastActiveAt: r.last_active_at,
    historyMode: r.history_mode as HistoryMode,
    mode: r.mode as AgentMode,
    metadata: parse(r.metadata),
    queuedInputs: parse(r.queued_inputs),
  };
  if (r.user_id !== null) t.userId = r.user_id;
  if (r.channel_context !== null) t.channelContext = r.channel_context;
  if (r.display_name !== null) t.displayName = r.display_name;
  if (r.configuration !== null) t.configuration = parse(r.configuration);
  if (r.plan !== null) t.plan = parse(r.plan);
  if (r.forked_from !== null) t.forkedFrom = parse(r.forked_from);
  if (r.backend_session !== null) t.backendSession = parse(r.backend_session);
  return t;
}

export function toTurn(r: TurnRow): Turn {
  const t: Turn = {
    id: r.id,
    threadId: r.thread_id,
    status: r.status as TurnStatus,
    startedAt: r.started_at,
    input: parse(r.input),
  };
  if (r.completed_at !== null) t.completedAt = r.completed_at;
  if (r.token_usage !== null) t.tokenUsage = parse(r.token_usage);
  if (r.error !== null) t.error = parse(r.error);
  if (r.model !== null) t.model = r.model;
  if (r.cancel_reason !== null) t.cancelReason = r.cancel_reason;
  if (r.diff !== null) t.diff = r.diff;
  return t;
}

/** Items are read as their JSON text only (one plucked column); the Item carries its own ids. */
export const toItem = (data: string): Item => parse(data);

export function toEvent(r: EventRow): RuntimeEvent {
  return { seq: r.seq, threadId: r.thread_id, type: r.type, ts: r.ts, data: parse<unknown>(r.data) } as RuntimeEvent;
}

export function encodeCursor(lastActiveAt: string, id: string): string {
  return Buffer.from(JSON.stringify([lastActiveAt, id])).toString("base64url");
}

export function decodeCursor(cursor: string): [string, string] {
  try {
    const value: unknown = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8"));
    if (Array.isArray(value) && value.length === 2 && typeof value[0] === "string" && typeof value[1] === "string") {
      return [value[0], value[1]];
    }
  } catch {
    // fall through
  }
  throw new RuntimeError("invalidInput", "Invalid cursor: pass back the nextCursor of a previous page.");
}
