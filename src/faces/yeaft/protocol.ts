// Yeaft WebSocket protocol (spec 002): flat JSON envelopes `{type, conversationId?, agentId?,
// sessionId?, …}` between browsers, the relay and agents. The relay routes by type and ids and
// does not read `data`.
import { z } from "zod";

export const Envelope = z.object({ type: z.string().min(1) }).passthrough();
export type Envelope = z.infer<typeof Envelope> & Record<string, unknown>;

/** Old names still accepted on the wire, and what they mean now. */
export const ALIASES: Record<string, string> = {
  chat: "send_message",
  unify_group_chat: "yeaft_session_chat",
};

/** Browser → agent: routed to the agent that owns the conversation (or the one named). */
export const TO_AGENT = new Set([
  "create_conversation",
  "send_message",
  "yeaft_session_chat",
  "cancel_execution",
  "ask_user_answer",
  "resume_conversation",
  "delete_conversation",
  "list_history_sessions",
  "list_folders",
  "sync_messages",
]);

/** Agent → browser: routed to the browsers of the agent's owner. */
export const TO_WEB = new Set([
  "claude_output",
  "yeaft_output",
  "yeaft_personas",
  "session_ready",
  "agent_status",
  "ask_user_question",
  "turn_completed",
  "execution_cancelled",
  "conversation_deleted",
  "history_sessions_list",
  "folders_list",
  "sync_messages_result",
  "error",
]);

/** Agent messages an agent may send without owning a conversation. */
export const CONVERSATION_EXEMPT = new Set(["agent_status", "history_sessions_list", "folders_list", "yeaft_personas", "error"]);

/** What the relay keeps for an agent that is away, and what is never dropped first. */
export const TERMINAL_TYPES = new Set(["turn_completed", "delete_conversation", "cancel_execution"]);
export const BUFFER_LIMITS = { messages: 5_000, bytes: 8 * 1024 * 1024 };

/** WebSocket close code for a refused handshake (policy violation). */
export const CLOSE_POLICY = 1008;
