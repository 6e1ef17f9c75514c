// Yeaft reports problems in-band: an `error` envelope with a stable code and a readable
// message; the connection stays open (only a refused handshake closes it, with 1008).

export type YeaftErrorCode =
  | "invalid_json"
  | "unknown_type"
  | "agent_not_found"
  | "conversation_not_found"
  | "conversation_exists"
  | "not_your_conversation"
  | "turn_failed"
  | "persona_not_found"
  | "invalid_attachment"
  | "busy"
  /** The relay's store cannot be reached: retry. */
  | "relay_unavailable";

export function errorEnvelope(
  code: YeaftErrorCode,
  message: string,
  extra: Record<string, unknown> = {},
): Record<string, unknown> & { type: "error" } {
  return { type: "error", code, message, ...extra };
}
