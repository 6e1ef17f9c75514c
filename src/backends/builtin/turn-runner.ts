// The agent loop for one turn: call the model (streaming), run the tools it asks for through
// the approval gate, feed the results back, and repeat until the model stops.
import type { ZodError } from "zod";
import type { ConversationMessage, ModelProvider, ThinkingMode, ToolCallRequest, ToolSpec, UsageReport } from "../../providers/provider.js";
import { ProviderError } from "../../providers/provider.js";
import type { ApprovalDecision, InputPart, ItemOf, PlanStep, TurnError } from "../../domain/model.js";
import type { TurnOutcome } from "../backend.js";
import type { TurnRecorder } from "../../domain/turn-recorder.js";
import type {
  ApprovalAsk,
  AnyTool,
  ClientToolCall,
  ClientToolResult,
  ToolContext,
  ToolEnvironment,
  ToolResult,
  UserQuestion,
} from "../../tools/tool.js";
import type { Workspace } from "../../tools/workspace.js";
import { TurnChanges, fileDiff } from "../../tools/diff.js";
import { ContextManager, type Conversation } from "./compaction.js";
import { inputToText } from "./history.js";
import { InputError } from "./user-input.js";

/** Upper bound on model calls in one turn, so a looping model cannot run forever. */
const MAX_MODEL_CALLS = 100;

/** What the runtime gives the engine for one turn. */
/** The item a model's tool call is recorded as: a toolCall, or one item with its result too. */
type CallItem = ItemOf<"toolCall"> | ItemOf<"pluginFunctionCall"> | ItemOf<"dynamicToolCall">;

export interface TurnHost {
  readonly threadId?: string;
  readonly recorder: TurnRecorder;
  readonly signal: AbortSignal;
  readonly workspace: Workspace;
  readonly provider: ModelProvider;
  readonly model: string;
  /** The turn's thinking mode, when it asks for one (ModelRequest.thinking). */
  readonly thinking?: ThinkingMode;
  readonly system: string;
  readonly tools: AnyTool[];
  /** The same tools as the model sees them. */
  readonly toolSpecs: ToolSpec[];
  readonly commandTimeoutMs: number;
  /** Conversation before this turn. */
  readonly history: ConversationMessage[];
  /** The last persisted item each history message was built from (server history only). */
  readonly historyItemIds?: ReadonlyMap<ConversationMessage, string>;
  /** The model's context window in tokens; undefined when unknown (no compaction before calls). */
  readonly contextWindow?: number;
  approve(ask: ApprovalAsk, callId: string): Promise<ApprovalDecision>;
  /** Puts a tool's question to the person following the thread (undefined: no one can answer). */
  ask?(question: UserQuestion): Promise<string | undefined>;
  /** Calls a tool a client provides (undefined: no client can). */
  callClientTool?(call: ClientToolCall): Promise<ClientToolResult | undefined>;
  /** The thread's tool environment, if a client attached one (looked up at each tool call). */
  environment?(): ToolEnvironment | undefined;
  /** The model message for a user's input (attachments read); throws InputError when it cannot be sent. */
  userMessage(input: InputPart[]): ConversationMessage;
  /** Inputs sent with turn/steer since the last call; each becomes a user message. */
  takeSteering(): InputPart[][];
  onUsage(usage: UsageReport): void;
  onPlan(plan: { explanation?: string; steps: PlanStep[] }): void;
  onDiff(diff: string): void;
}

interface ModelStep {
  text: string;
  reasoning?: { text: string; signature?: string };
  toolCalls: Array<ToolCallRequest & { item: CallItem }>;
  /** The last item the response was recorded as, if any. */
  lastItemId?: string;
}

const CANCELLED: TurnOutcome = { status: "cancelled", reason: "interrupted" };

export class TurnRunner {
  private readonly changes = new TurnChanges();
  private readonly context: ContextManager;

  constructor(private readonly host: TurnHost) {
    this.context = new ContextManager(host);
  }

  async run(input: InputPart[]): Promise<TurnOutcome> {
    const { host } = this;
    const text = inputToText(input);
    const userItem = host.recorder.record("userMessage", { text, input });
    let conversation: Conversation;
    try {
      const request = host.userMessage(input);
      conversation = {
        messages: [...host.history, request],
        itemIds: new Map([...(host.historyItemIds ?? []), [request, userItem.id]]),
        latestUser: request,
      };
    } catch (error) {
      return this.failed(error);
    }
    return this.loop(conversation);
  }

  /**
   * Continues a turn another process started and lost (failover): `host.history` holds what
   * it recorded so far, its input included; the model is asked again from there.
   */
  resume(): Promise<TurnOutcome> {
    const messages = [...this.host.history];
    const latestUser = messages.findLast((m) => m.role === "user");
    if (!latestUser) return Promise.resolve(this.failed(new Error("The turn to continue has no user message.")));
    return this.loop({ messages, itemIds: new Map(this.host.historyItemIds ?? []), latestUser });
  }

  private failed(error: unknown): TurnOutcome {
    if (this.host.signal.aborted) return CANCELLED;
    const turnError = toTurnError(error);
    this.host.recorder.record("error", { code: turnError.code, message: turnError.message });
    return { status: "failed", error: turnError };
  }

  private async loop(conversation: Conversation): Promise<TurnOutcome> {
    const { host } = this;
    try {
      const { messages } = conversation; // compaction edits this array in place
      for (let call = 0; call < MAX_MODEL_CALLS; call++) {
        if (host.signal.aborted) return CANCELLED;
        const step = await this.modelStep(conversation);
        if (!step || host.signal.aborted) return CANCELLED;
        const reply: ConversationMessage = {
          role: "assistant",
          content: step.text,
          ...(step.reasoning ? { reasoning: step.reasoning } : {}),
          ...(step.toolCalls.length
            ? { toolCalls: step.toolCalls.map(({ id, name, argumentsText }) => ({ id, name, argumentsText })) }
            : {}),
        };
        messages.push(reply);
        if (step.lastItemId) conversation.itemIds.set(reply, step.lastItemId);
        for (const toolCall of step.toolCalls) {
          const outcome = await this.runTool(toolCall);
          if (host.signal.aborted) return CANCELLED;
          if (outcome === "cancel") return { status: "cancelled", reason: "approvalCancelled" };
          const { result, itemId } = outcome;
          const message: ConversationMessage = {
            role: "tool",
            toolCallId: toolCall.id,
            toolName: toolCall.name,
            content: result.output,
            ...(result.isError ? { isError: true } : {}),
          };
          messages.push(message);
          conversation.itemIds.set(message, itemId);
        }
        const steered = this.injectSteering(conversation);
        if (step.toolCalls.length === 0 && !steered) return { status: "completed" };
      }
      return {
        status: "failed",
        error: { code: "tooManySteps", message: `The model made more than ${MAX_MODEL_CALLS} calls in one turn.` },
      };
    } catch (error) {
      return this.failed(error);
    } finally {
      host.recorder.closeOpen();
    }
  }

  /** Adds steering inputs as user messages; true when there were any. */
  private injectSteering(conversation: Conversation): boolean {
    const inputs = this.host.takeSteering();
    for (const input of inputs) {
      const text = inputToText(input);
      const item = this.host.recorder.record("userMessage", { text, input, steered: true });
      const message = this.host.userMessage(input);
      conversation.messages.push(message);
      conversation.itemIds.set(message, item.id);
      conversation.latestUser = message;
    }
    return inputs.length > 0;
  }

  /**
   * One model call within the context window: compacts first when the request nears the
   * window, and once more (then retries) when the provider rejects it as too long anyway.
   * Undefined when the turn was interrupted meanwhile.
   */
  private async modelStep(conversation: Conversation): Promise<ModelStep | undefined> {
    const { signal } = this.host;
    await this.context.fit(conversation);
    if (signal.aborted) return undefined;
    try {
      return await this.callModel(conversation.messages);
    } catch (error) {
      const tooLong = error instanceof ProviderError && error.code === "contextWindowExceeded" && error.beforeOutput;
      if (!tooLong || signal.aborted) throw error;
      if (!(await this.context.fit(conversation, true))) {
        if (signal.aborted) return undefined;
        throw error; // nothing left to compact
      }
      if (signal.aborted) return undefined;
      return await this.callModel(conversation.messages);
    }
  }

  private async callModel(messages: ConversationMessage[]): Promise<ModelStep> {
    const { host } = this;
    const { recorder } = host;
    let message: ItemOf<"agentMessage"> | undefined;
    let reasoning: ItemOf<"reasoningContent"> | undefined;
    const calls = new Map<number, ModelStep["toolCalls"][number]>();
    let lastItemId: string | undefined;
    const estimated = this.context.rawEstimate(messages);

    const stream = host.provider.stream(
      { model: host.model, system: host.system, messages, tools: host.toolSpecs, ...(host.thinking ? { thinking: host.thinking } : {}) },
      host.signal,
    );
    for await (const event of stream) {
      switch (event.type) {
        case "textDelta":
          if (!message) lastItemId = (message = recorder.start("agentMessage", { text: "" })).id;
          recorder.appendText(message, "agentMessage", event.delta);
          break;
        case "reasoningDelta":
          if (!reasoning) lastItemId = (reasoning = recorder.start("reasoningContent", { text: "" })).id;
          recorder.appendText(reasoning, "reasoning", event.delta);
          break;
        case "reasoningSignature":
          if (!reasoning) lastItemId = (reasoning = recorder.start("reasoningContent", { text: "" })).id;
          reasoning.payload.signature = event.signature;
          break;
        case "toolCallStart": {
          const tool = this.host.tools.find((t) => t.name === event.name);
          const item: CallItem = tool?.dynamic
            ? recorder.start("dynamicToolCall", { callId: event.id, toolName: event.name, argumentsText: "" })
            : tool?.plugin
              ? recorder.start("pluginFunctionCall", {
                  callId: event.id,
                  toolName: event.name,
                  pluginId: tool.plugin.id,
                  functionName: tool.plugin.functionName,
                  argumentsText: "",
                })
              : recorder.start("toolCall", {
                  callId: event.id,
                  toolName: event.name,
                  argumentsText: "",
                  ...(tool?.mcpServer ? { mcpServer: tool.mcpServer } : {}),
                });
          lastItemId = item.id;
          calls.set(event.index, { id: event.id, name: event.name, argumentsText: "", item });
          break;
        }
        case "toolCallDelta": {
          const call = calls.get(event.index);
          if (!call) break;
          call.argumentsText += event.argumentsDelta;
          call.item.payload.argumentsText = call.argumentsText;
          recorder.delta(call.item, "toolArguments", event.argumentsDelta);
          break;
        }
        case "toolCallArguments": {
          const call = calls.get(event.index);
          if (!call) break;
          call.argumentsText = event.argumentsText;
          call.item.payload.argumentsText = event.argumentsText;
          break;
        }
        case "usage":
          host.onUsage(event.usage);
          this.context.calibrate(estimated, event.usage.inputTokens);
          break;
        case "stop":
          break;
      }
    }
    if (reasoning) recorder.complete(reasoning);
    if (message) recorder.complete(message);
    for (const call of calls.values()) {
      const parsed = parseJson(call.argumentsText).value;
      // A one-item call stays open until the tool has run (it carries the result).
      if (call.item.type !== "toolCall") call.item.payload.arguments = parsed;
      else recorder.complete(call.item, { arguments: parsed });
    }
    return {
      text: message?.payload.text ?? "",
      ...(reasoning
        ? {
            reasoning: { text: reasoning.payload.text, ...(reasoning.payload.signature ? { signature: reasoning.payload.signature } : {}) },
          }
        : {}),
      toolCalls: [...calls.values()],
      ...(lastItemId ? { lastItemId } : {}),
    };
  }

  private async runTool(call: ModelStep["toolCalls"][number]): Promise<{ result: ToolResult; itemId: string } | "cancel"> {
    const { recorder } = this.host;
    const result = await this.executeTool(call);
    if (call.item.type !== "toolCall") {
      recorder.complete(call.item, result === "cancel" ? {} : { output: result.output, success: !result.isError });
      return result === "cancel" ? result : { result, itemId: call.item.id };
    }
    if (result === "cancel") return result;
    const item = recorder.record("toolResult", { callId: call.id, toolName: call.name, success: !result.isError, output: result.output });
    return { result, itemId: item.id };
  }

  private async executeTool(call: ToolCallRequest): Promise<ToolResult | "cancel"> {
    const { host } = this;
    const tool = host.tools.find((t) => t.name === call.name);
    if (!tool) return failure(`Unknown tool "${call.name}". Available tools: ${host.tools.map((t) => t.name).join(", ")}.`);
    const parsed = parseJson(call.argumentsText || "{}");
    if (parsed.error) return failure(`The arguments are not valid JSON: ${parsed.error}`);
    const validated = tool.input.safeParse(parsed.value);
    if (!validated.success) return failure(`Invalid arguments for ${tool.name}: ${describeIssues(validated.error)}`);
    const input: unknown = validated.data;

    let ask: ApprovalAsk | null;
    try {
      ask = tool.approval?.(input, { workspace: host.workspace }) ?? null;
    } catch (error) {
      // Resolving the path failed (outside the workspace, a file where a directory should be,
      // a link loop): the model can fix its arguments, so it is told, and the turn goes on.
      return failure(error instanceof Error ? error.message : String(error));
    }
    if (ask) {
      const decision = await host.approve(ask, call.id);
      if (decision === "cancel") return "cancel";
      if (decision === "decline")
        return failure("The user declined this action. Do not retry it; ask the user or choose another approach.");
    }
    return this.execute(tool, call, input);
  }

  private async execute(tool: AnyTool, call: ToolCallRequest, input: unknown): Promise<ToolResult> {
    const { host } = this;
    const { recorder } = host;
    const execution = recorder.start("toolExecution", { callId: call.id, toolName: tool.name });
    const command =
      tool.kind === "shell"
        ? recorder.start("commandExecution", {
            callId: call.id,
            command: String((input as { command?: unknown }).command ?? ""),
            cwd: host.workspace.root,
            output: "",
          })
        : undefined;
    const environment = host.environment?.();
    const ctx: ToolContext = {
      workspace: host.workspace,
      ...(host.threadId ? { threadId: host.threadId } : {}),
      callId: call.id,
      ...(environment ? { environment } : {}),
      signal: host.signal,
      commandTimeoutMs: host.commandTimeoutMs,
      emitOutput: (chunk, stream) => {
        if (!command) return;
        command.payload.output += chunk;
        recorder.delta(command, "commandOutput", chunk, stream);
      },
      recordFileChange: (change) => this.recordFileChange(call.id, change),
      updatePlan: (plan) => host.onPlan(plan),
      ...(host.ask ? { ask: host.ask } : {}),
      ...(host.callClientTool ? { callClientTool: host.callClientTool } : {}),
    };
    let result: ToolResult;
    try {
      result = await tool.execute(input, ctx);
    } catch (error) {
      result = failure(error instanceof Error ? error.message : String(error));
    }
    if (command) {
      recorder.complete(command, {
        exitCode: result.exitCode ?? null,
        ...(result.timedOut ? { timedOut: true } : {}),
        ...(result.interrupted ? { interrupted: true } : {}),
      });
    }
    recorder.complete(execution, { success: !result.isError });
    return result;
  }

  private recordFileChange(callId: string, change: { path: string; before: string | null; after: string }): void {
    const { host } = this;
    const rel = host.workspace.relative(change.path);
    const diff = fileDiff(rel, change.before, change.after);
    host.recorder.record("fileChange", { callId, path: rel, kind: change.before === null ? "add" : "update", diff });
    this.changes.record(change);
    host.onDiff(this.changes.unifiedDiff(host.workspace));
  }
}

function failure(output: string): ToolResult {
  return { output, isError: true };
}

function parseJson(text: string): { value?: unknown; error?: string } {
  try {
    return { value: JSON.parse(text) };
  } catch (error) {
    return { error: (error as Error).message };
  }
}

function describeIssues(error: ZodError): string {
  return error.issues.map((issue) => `${issue.path.join(".") || "(root)"}: ${issue.message}`).join("; ");
}

function toTurnError(error: unknown): TurnError {
  if (error instanceof InputError) return { code: error.code, message: error.message };
  if (error instanceof ProviderError) {
    return { code: error.code, message: error.message, ...(error.httpStatus ? { httpStatus: error.httpStatus } : {}) };
  }
  return { code: "internal", message: error instanceof Error ? error.message : String(error) };
}
