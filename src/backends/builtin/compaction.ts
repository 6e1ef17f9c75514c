// Context-window management: before each model call the request's size is estimated; when it
// nears the model's context window, older conversation is replaced by one summary message that
// the model writes in a separate call ("compaction"), and a systemNotice item records it. The
// notice carries the summary and the last item it covers, so history rebuilt from the event
// log (history.ts) keeps using the summary after a restart. A request that still cannot fit is
// never sent: the turn fails with contextWindowExceeded.
import type { ConversationMessage, ModelProvider, ModelRequest, ToolSpec, UsageReport } from "../../providers/provider.js";
import { ProviderError } from "../../providers/provider.js";
import type { TurnRecorder } from "../../domain/turn-recorder.js";
import { CHARS_PER_TOKEN, calibrationFactor, estimateFixedTokens, estimateMessageTokens, estimateTextTokens } from "./tokens.js";

export const SUMMARY_PREFIX = "Summary of the earlier conversation: ";

/** The user message that stands in for everything a compaction covered. */
export function summaryMessage(summary: string): ConversationMessage {
  return { role: "user", content: `${SUMMARY_PREFIX}${summary}` };
}

// ---- budget ---------------------------------------------------------------------------------

/** Compact once the input estimate passes this share of the window. */
const COMPACT_AT_SHARE = 0.8;
/** After compaction, system prompt + tools + kept messages take at most this share (the summary comes on top). */
const KEEP_SHARE = 0.4;
/** The summary may take this share of the window, within SUMMARY_MIN/MAX_TOKENS. */
const SUMMARY_SHARE = 0.1;
const SUMMARY_MIN_TOKENS = 256;
const SUMMARY_MAX_TOKENS = 4096;
/** Room kept for the answer when the request sets no limit: 8k, the Anthropic provider's default max_tokens. */
const DEFAULT_OUTPUT_RESERVE = 8192;
/** ...but never more than this share of the window, so small windows keep room for input. */
const MAX_OUTPUT_RESERVE_SHARE = 0.25;

export interface ContextBudget {
  window: number;
  /** Tokens left free for the model's answer. */
  outputReserve: number;
  /** Above this input estimate, older history is compacted before the call. */
  compactAt: number;
  /** Above this input estimate a request is known not to fit (with room for the answer) and is not sent. */
  maxInput: number;
  /** What system prompt, tools and kept messages may take after a compaction. */
  keep: number;
  /** The longest summary asked for (the summarization call's maxOutputTokens). */
  summaryTokens: number;
}

export function contextBudget(window: number, maxOutputTokens?: number): ContextBudget {
  const outputReserve = Math.floor(Math.min(Math.max(maxOutputTokens ?? 0, DEFAULT_OUTPUT_RESERVE), window * MAX_OUTPUT_RESERVE_SHARE));
  const maxInput = window - outputReserve;
  return {
    window,
    outputReserve,
    compactAt: Math.min(Math.floor(window * COMPACT_AT_SHARE), maxInput),
    maxInput,
    keep: Math.floor(window * KEEP_SHARE),
    summaryTokens: Math.round(Math.min(SUMMARY_MAX_TOKENS, Math.max(SUMMARY_MIN_TOKENS, window * SUMMARY_SHARE))),
  };
}

// ---- cut point ------------------------------------------------------------------------------

export interface Cut {
  /** messages[0, cut) are summarized; messages[cut, end) are kept as they are. */
  cut: number;
  /** True when the pinned message lies before the cut and is kept verbatim right after the summary. */
  keepsPinned: boolean;
}

/**
 * Chooses how much of `messages` to summarize: the earliest cut whose kept part (the messages
 * from the cut on, plus the pinned message when it lies before the cut) fits `budget`; when
 * none does, the latest possible cut. A cut never lands on a tool result, so an assistant's
 * tool calls and their results stay together. Undefined when nothing could be summarized.
 */
export function chooseCut(
  messages: readonly ConversationMessage[],
  opts: { budget: number; pinned?: number; tokens: (message: ConversationMessage) => number },
): Cut | undefined {
  const n = messages.length;
  const pinned = opts.pinned !== undefined && opts.pinned >= 0 && opts.pinned < n ? opts.pinned : undefined;
  const pinnedTokens = pinned === undefined ? 0 : opts.tokens(messages[pinned]!);
  // suffix[i] = tokens of messages[i, n)
  const suffix = new Array<number>(n + 1).fill(0);
  for (let i = n - 1; i >= 0; i--) suffix[i] = suffix[i + 1]! + opts.tokens(messages[i]!);

  let latest: Cut | undefined;
  for (let cut = 1; cut <= n; cut++) {
    if (cut < n && messages[cut]!.role === "tool") continue;
    const keepsPinned = pinned !== undefined && pinned < cut;
    if (cut - (keepsPinned ? 1 : 0) === 0) continue; // nothing left to summarize
    const kept = suffix[cut]! + (keepsPinned ? pinnedTokens : 0);
    if (kept <= opts.budget) return { cut, keepsPinned };
    latest = { cut, keepsPinned };
  }
  return latest;
}

// ---- the compaction itself --------------------------------------------------------------------

/** What the context manager needs from the turn (TurnHost provides it). */
export interface CompactionHost {
  readonly recorder: TurnRecorder;
  readonly signal: AbortSignal;
  readonly provider: ModelProvider;
  readonly model: string;
  readonly system: string;
  readonly toolSpecs: ToolSpec[];
  /** Tokens; undefined when unknown, which turns off compaction before calls. */
  readonly contextWindow?: number;
  onUsage(usage: UsageReport): void;
}

/** The turn's conversation, which compaction edits in place. */
export interface Conversation {
  messages: ConversationMessage[];
  /** The last persisted item each message was built from, so a notice can say what it covers. */
  itemIds: Map<ConversationMessage, string>;
  /** The most recent user message of the current turn: never summarized away. */
  latestUser: ConversationMessage;
}

const SUMMARY_SYSTEM =
  "You write concise, faithful summaries of conversations between a user and a coding agent, so that the agent can continue the work without the original messages.";

function summaryInstruction(words: number): string {
  return [
    `Summarize the conversation above in at most about ${words} words.`,
    "Keep what is needed to continue: the user's goals and requests, decisions made, files read or changed (with paths), commands run and their important results, errors, and open tasks.",
    "Write plain prose or short bullet points. Do not address the user and do not continue the work.",
  ].join(" ");
}

export class ContextManager {
  /** Scales estimates to what the provider reported for this turn's previous call (see tokens.ts). */
  private factor = 1;

  constructor(private readonly host: CompactionHost) {}

  /** The uncalibrated estimate of a request with these messages. */
  rawEstimate(messages: readonly ConversationMessage[]): number {
    return estimateFixedTokens(this.fixed()) + messages.reduce((sum, m) => sum + estimateMessageTokens(m), 0);
  }

  estimate(messages: readonly ConversationMessage[]): number {
    return Math.ceil(this.rawEstimate(messages) * this.factor);
  }

  /** Learns from the input tokens the provider reported for a request estimated at `rawEstimate`. */
  calibrate(rawEstimate: number, reportedInputTokens: number): void {
    if (reportedInputTokens > 0) this.factor = calibrationFactor(rawEstimate, reportedInputTokens);
  }

  /**
   * Makes the conversation fit before a model call: compacts when the estimate passes the
   * threshold (or always, with `force`, after the provider said the request was too long), and
   * throws contextWindowExceeded when the request would still not fit. True when it compacted;
   * false also when the turn was interrupted during the summarization call.
   */
  async fit(conversation: Conversation, force = false): Promise<boolean> {
    const window = this.host.contextWindow;
    const limits = window === undefined ? undefined : contextBudget(window);
    const before = this.estimate(conversation.messages);
    if (!force && (!limits || before <= limits.compactAt)) return false;

    // After a provider rejection our estimate ran low, so size the compaction from what we sent.
    const sizing = force ? contextBudget(Math.min(window ?? before, before)) : limits!;
    if (limits) {
      // Don't pay for a summary when even the smallest possible result (summary + the current
      // request) could not be sent; send as is when that still fits.
      const smallest = this.estimate([summaryMessage(""), conversation.latestUser]) + sizing.summaryTokens;
      if (smallest > limits.maxInput) {
        if (before > limits.maxInput) throw tooLarge(before, limits);
        return false;
      }
    }
    const compacted = await this.compact(conversation, sizing, before, force);
    if (limits) {
      const after = this.estimate(conversation.messages);
      if (after > limits.maxInput && !this.host.signal.aborted) throw tooLarge(after, limits);
    }
    return compacted;
  }

  private async compact(conversation: Conversation, sizing: ContextBudget, before: number, forced: boolean): Promise<boolean> {
    const { messages, itemIds, latestUser } = conversation;
    const pinned = messages.indexOf(latestUser);
    const fixed = Math.ceil(estimateFixedTokens(this.fixed()) * this.factor);
    const choice = chooseCut(messages, {
      budget: sizing.keep - fixed,
      ...(pinned >= 0 ? { pinned } : {}),
      tokens: (m) => estimateMessageTokens(m) * this.factor,
    });
    if (!choice) return false;
    const covered = messages.slice(0, choice.cut);
    const summarized = covered.filter((m) => m !== latestUser);
    // Re-summarizing nothing but the previous summary would only burn a call per step.
    if (summarized.length === 1 && summarized[0]!.role === "user" && summarized[0]!.content.startsWith(SUMMARY_PREFIX)) return false;

    const summary = await this.summarize(covered, sizing);
    if (summary === undefined) return false;

    const coversThroughItemId = covered
      .map((m) => itemIds.get(m))
      .filter((id) => id !== undefined)
      .at(-1);
    const keptUserItemId = choice.keepsPinned ? itemIds.get(latestUser) : undefined;
    const count = summarized.length;
    const what = `Compacted ${count} earlier message${count === 1 ? "" : "s"} into a summary`;
    const message = forced
      ? `${what} after the model reported the request as too long for its context window (about ${before} tokens).`
      : `${what} to stay within the model's context window (${before} of ${sizing.window} tokens).`;
    const notice = this.host.recorder.record("systemNotice", {
      kind: "compaction",
      message,
      summary,
      ...(coversThroughItemId ? { coversThroughItemId } : {}),
      ...(keptUserItemId ? { keptUserItemId } : {}),
    });
    const head = summaryMessage(summary);
    itemIds.set(head, notice.id);
    messages.splice(0, choice.cut, head, ...(choice.keepsPinned ? [latestUser] : []));
    return true;
  }

  /** Asks the model for the summary (no tools, nothing streamed to clients); undefined when interrupted. */
  private async summarize(covered: ConversationMessage[], sizing: ContextBudget): Promise<string | undefined> {
    const { host } = this;
    const instruction = summaryInstruction(Math.round(sizing.summaryTokens * 0.75));
    // The transcript gets whatever the window leaves after the instruction and the summary itself.
    const room = sizing.window - sizing.summaryTokens - estimateTextTokens(SUMMARY_SYSTEM + instruction) - 64;
    const maxChars = Math.max(2000, Math.floor((room * CHARS_PER_TOKEN) / this.factor));
    const request: ModelRequest = {
      model: host.model,
      system: SUMMARY_SYSTEM,
      messages: [
        { role: "user", content: `<conversation>\n${clip(renderTranscript(covered), maxChars)}\n</conversation>\n\n${instruction}` },
      ],
      tools: [],
      maxOutputTokens: sizing.summaryTokens,
    };
    let text = "";
    for await (const event of host.provider.stream(request, host.signal)) {
      if (event.type === "textDelta") text += event.delta;
      else if (event.type === "usage") host.onUsage(event.usage);
    }
    if (host.signal.aborted) return undefined;
    return text.trim() || "(The model returned an empty summary.)";
  }

  private fixed(): Pick<ModelRequest, "system" | "tools"> {
    return { system: this.host.system, tools: this.host.toolSpecs };
  }
}

/**
 * The covered conversation as plain text. Tool calls and results are rendered as text rather
 * than sent as structured messages: the summarization call has no tools, and some APIs reject
 * tool blocks in a request without tool definitions.
 */
export function renderTranscript(messages: readonly ConversationMessage[]): string {
  const parts: string[] = [];
  for (const message of messages) {
    switch (message.role) {
      case "user":
        parts.push(`[user]\n${message.content}`);
        break;
      case "assistant":
        if (message.content) parts.push(`[assistant]\n${message.content}`);
        for (const call of message.toolCalls ?? []) parts.push(`[assistant called ${call.name}]\n${call.argumentsText}`);
        break;
      case "tool":
        parts.push(`[${message.isError ? "error from" : "result of"} ${message.toolName}]\n${message.content}`);
        break;
    }
  }
  return parts.join("\n\n");
}

/** Shortens text to maxChars, keeping its start (earlier summaries) and its more relevant end. */
function clip(text: string, maxChars: number): string {
  if (text.length <= maxChars) return text;
  const head = Math.floor(maxChars / 4);
  const tail = maxChars - head;
  return `${text.slice(0, head)}\n[... ${text.length - maxChars} characters omitted ...]\n${text.slice(text.length - tail)}`;
}

function tooLarge(estimate: number, limits: ContextBudget): ProviderError {
  // Reuses the provider's error code so clients see one reason for "too long", however detected.
  return new ProviderError(
    "contextWindowExceeded",
    `The request is too large for the model's context window: about ${estimate} tokens of input, but at most ${limits.maxInput} fit in the ${limits.window}-token window with room for the answer, even after compacting the earlier conversation. Send a shorter message or start a new thread.`,
  );
}
