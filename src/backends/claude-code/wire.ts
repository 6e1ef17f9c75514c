// The parts of Claude Code's stream-json protocol (`claude -p --input-format stream-json
// --output-format stream-json --verbose --include-partial-messages --permission-prompt-tool stdio`)
// this backend relies on, as observed from Claude Code 2.1.x. Every message is one JSON object
// per line. Fields not listed here are ignored; every field is treated as possibly absent.

/** A content block of an assistant or user message (Anthropic Messages API shapes). */
export type ContentBlock =
  | { type: "text"; text: string }
  | { type: "thinking"; thinking: string; signature?: string }
  | { type: "redacted_thinking"; data?: string }
  | { type: "tool_use"; id: string; name: string; input: Record<string, unknown> }
  | { type: "tool_result"; tool_use_id: string; content?: string | Array<{ type: string; text?: string }>; is_error?: boolean }
  | { type: "image"; source: unknown };

export interface WireUsage {
  input_tokens?: number;
  output_tokens?: number;
  cache_read_input_tokens?: number;
  cache_creation_input_tokens?: number;
  output_tokens_details?: { thinking_tokens?: number };
}

/** Per-model usage; `costUSD` in USD. */
export interface WireModelUsage {
  costUSD?: number;
}

/** What the CLI writes on stdout. */
export type CliMessage =
  /** Sent when a session starts and again at the start of every turn. */
  | { type: "system"; subtype: "init"; session_id: string; model?: string; cwd?: string; claude_code_version?: string }
  | { type: "system"; subtype: string; session_id?: string }
  /** A raw Messages API stream event (only with --include-partial-messages). */
  | { type: "stream_event"; event: StreamEvent; parent_tool_use_id?: string | null; session_id?: string }
  /** One complete content block of an assistant message (a message with several blocks comes as several lines). */
  | { type: "assistant"; message: { id?: string; content: ContentBlock[] }; parent_tool_use_id?: string | null; session_id?: string }
  /** Tool results (and notes such as "[Request interrupted by user]"). */
  | {
      type: "user";
      message: { content: string | ContentBlock[] };
      parent_tool_use_id?: string | null;
      /** The tool's structured output, e.g. Bash {stdout, stderr, interrupted}, Write/Edit {originalFile, ...}. */
      tool_use_result?: unknown;
      /** Per tool result: `non_execution_kind` is set when the tool did not run (denied, rejected). */
      tool_result_meta?: Array<{ id?: string; non_execution_kind?: string }>;
      session_id?: string;
    }
  /** The end of a turn. `total_cost_usd` is the session's running total (including resumed history). */
  | {
      type: "result";
      subtype: string;
      is_error?: boolean;
      result?: string;
      errors?: string[];
      session_id?: string;
      total_cost_usd?: number;
      /** This turn's tokens. */
      usage?: WireUsage;
      /** Usage (with cost) since the previous result, by model; absent in older versions. */
      model_usage_since_last_result?: Record<string, WireModelUsage>;
      terminal_reason?: string;
    }
  | ControlRequest
  | ControlResponse
  | { type: "control_cancel_request"; request_id: string }
  | { type: string };

export type StreamEvent =
  | { type: "message_start"; message?: { id?: string } }
  | { type: "content_block_start"; index: number; content_block: { type: string; id?: string; name?: string } }
  | {
      type: "content_block_delta";
      index: number;
      delta:
        | { type: "text_delta"; text: string }
        | { type: "thinking_delta"; thinking: string }
        | { type: "signature_delta"; signature: string }
        | { type: "input_json_delta"; partial_json: string }
        | { type: string };
    }
  | { type: "content_block_stop"; index: number }
  | { type: "message_delta" | "message_stop" | "ping" };

/** A control request, either direction: the CLI asks `can_use_tool`; we send `initialize` and `interrupt`. */
export interface ControlRequest {
  type: "control_request";
  request_id: string;
  request:
    | {
        subtype: "can_use_tool";
        tool_name: string;
        input: Record<string, unknown>;
        tool_use_id?: string;
        description?: string;
        decision_reason?: string;
        blocked_path?: string;
      }
    | { subtype: "initialize" }
    | { subtype: "interrupt" }
    | { subtype: string };
}

export interface ControlResponse {
  type: "control_response";
  response:
    | { subtype: "success"; request_id: string; response?: Record<string, unknown> }
    | { subtype: "error"; request_id: string; error: string };
}

/** The answer to `can_use_tool`. `updatedInput` is required by the CLI when allowing. */
export type PermissionResult =
  { behavior: "allow"; updatedInput: Record<string, unknown> } | { behavior: "deny"; message: string; interrupt?: boolean };

/** What we write to start a turn. */
export interface UserInputMessage {
  type: "user";
  message: { role: "user"; content: Array<Record<string, unknown>> };
  parent_tool_use_id: null;
  session_id: string;
}

export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
