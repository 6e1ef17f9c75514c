// One turn on a Claude Code session: write the user message, map what the CLI streams back,
// answer its permission requests through the thread's approvals, and end at its `result`, at
// an interrupt, or when the process dies.
import fs from "node:fs/promises";
import path from "node:path";
import type { ApprovalDecision, InputPart } from "../../domain/model.js";
import { Workspace } from "../../tools/workspace.js";
import type { TurnContext, TurnOutcome } from "../backend.js";
import { inputToText } from "../builtin/history.js";
import { TurnMapper, permissionAsk, resultError, resultUsage, turnCost } from "./mapper.js";
import type { ClaudeSession } from "./session.js";
import type { CliMessage, ControlRequest, UserInputMessage } from "./wire.js";

/** How long an interrupted turn may take to end before its process is killed. */
export const INTERRUPT_GRACE_MS = 5000;

const DECLINED = "The user declined this action. Do not retry it; ask the user or choose another approach.";

export async function runClaudeTurn(session: ClaudeSession, ctx: TurnContext): Promise<TurnOutcome> {
  const { recorder } = ctx;
  const workspace = new Workspace(ctx.thread.workspacePath);
  const first = await userMessage(ctx.input, workspace.root, session.sessionId);
  const mapper = new TurnMapper({
    recorder,
    workspace,
    workspacePath: ctx.thread.workspacePath,
    reportPlan: (plan) => ctx.reportPlan(plan),
    reportDiff: (diff) => ctx.reportDiff(diff),
  });
  let recordedSession = ctx.session?.backend === "claude-code" ? ctx.session.sessionId : undefined;

  return new Promise<TurnOutcome>((resolve) => {
    let ended = false;
    let cancelReason: string | undefined;
    let killTimer: NodeJS.Timeout | undefined;

    const end = (outcome: TurnOutcome): void => {
      if (ended) return;
      ended = true;
      clearTimeout(killTimer);
      ctx.signal.removeEventListener("abort", onAbort);
      detach();
      mapper.finish();
      resolve(outcome);
    };
    const fail = (error: { code: string; message: string }): void => {
      recorder.record("error", { code: error.code, message: error.message });
      end({ status: "failed", error });
    };
    /** Stops the turn: the CLI is asked to interrupt, and killed if it has not ended the turn in time. */
    const cancel = (reason: string, ask: boolean): void => {
      if (cancelReason || ended) return;
      cancelReason = reason;
      if (ask) session.request("interrupt").catch(() => {});
      killTimer = setTimeout(() => {
        ctx.log.warn({ graceMs: INTERRUPT_GRACE_MS }, "claude-code did not end the interrupted turn in time; killing it");
        void session.kill();
        end({ status: "cancelled", reason });
      }, INTERRUPT_GRACE_MS);
    };
    const onAbort = (): void => cancel("interrupted", true);

    const onResult = (result: Extract<CliMessage, { type: "result" }>): void => {
      const cost = turnCost(result, session.costTotal);
      if (typeof result.total_cost_usd === "number") session.costTotal = result.total_cost_usd;
      const usage = resultUsage(result, cost);
      if (usage) ctx.reportUsage(usage);
      if (cancelReason) return end({ status: "cancelled", reason: cancelReason });
      const error = resultError(result);
      if (error) return fail(error);
      // Input sent with turn/steer while the agent worked: it continues the same turn.
      const steering = ctx.takeSteering();
      if (steering.length > 0) {
        for (const input of steering) recorder.record("userMessage", { text: inputToText(input), input, steered: true });
        void userMessage(steering.flat(), workspace.root, session.sessionId).then((message) => session.send(message));
        return;
      }
      end({ status: "completed" });
    };

    const onPermission = async (request: ControlRequest): Promise<void> => {
      const body = request.request;
      if (body.subtype !== "can_use_tool" || !("tool_name" in body)) {
        session.respond(request.request_id, { error: `Switchyard does not handle "${body.subtype}" requests.` });
        return;
      }
      const input = body.input && typeof body.input === "object" ? body.input : {};
      const callId = body.tool_use_id ?? request.request_id;
      let decision: ApprovalDecision;
      try {
        decision = ended || cancelReason ? "cancel" : await ctx.approve(permissionAsk(body, workspace), callId);
      } catch (error) {
        ctx.log.error({ err: error }, "approval failed");
        decision = "decline";
      }
      if (decision === "accept" || decision === "acceptForSession" || decision === "acceptAlways") {
        session.respond(request.request_id, { behavior: "allow", updatedInput: input });
        return;
      }
      mapper.markDenied(callId);
      if (decision === "decline") {
        session.respond(request.request_id, { behavior: "deny", message: DECLINED });
        return;
      }
      // cancel: the CLI stops the turn itself when told to interrupt with the denial.
      session.respond(request.request_id, { behavior: "deny", message: "The user cancelled this turn.", interrupt: true });
      cancel(cancelReason ?? "approvalCancelled", false);
    };

    const detach = session.attach({
      message: (message) => {
        if (ended) return;
        if (message.type === "system" && "subtype" in message && message.subtype === "init" && typeof message.session_id === "string") {
          if (message.session_id !== recordedSession) {
            recordedSession = message.session_id;
            ctx.recordSession({ backend: "claude-code", sessionId: message.session_id });
          }
        }
        mapper.handle(message);
        if (message.type === "result") onResult(message as Extract<CliMessage, { type: "result" }>);
      },
      controlRequest: (request) => void onPermission(request),
      exit: () => {
        if (cancelReason) end({ status: "cancelled", reason: cancelReason });
        else fail(session.failure());
      },
    });
    if (!session.alive) {
      fail(session.failure());
      return;
    }
    ctx.signal.addEventListener("abort", onAbort, { once: true });
    if (ctx.signal.aborted) end({ status: "cancelled", reason: "interrupted" });
    else session.send(first);
  });
}

/** The stream-json user message for a turn's input: text, slash commands, @file mentions, images. */
export async function userMessage(input: InputPart[], root: string, sessionId: string | undefined): Promise<UserInputMessage> {
  const content: Array<Record<string, unknown>> = [];
  for (const part of input) {
    switch (part.type) {
      case "text":
        content.push({ type: "text", text: part.text });
        break;
      case "commandRef":
        content.push({ type: "text", text: `/${part.name}${part.args ? ` ${part.args}` : ""}` });
        break;
      case "skillRef":
        content.push({ type: "text", text: `/${part.name}` });
        break;
      case "fileRef":
        content.push({ type: "text", text: `@${part.path}` });
        break;
      case "image": {
        const data = /^data:([^;,]+);base64,(.*)$/s.exec(part.url);
        content.push({
          type: "image",
          source: data ? { type: "base64", media_type: data[1], data: data[2] } : { type: "url", url: part.url },
        });
        break;
      }
      case "localImage": {
        try {
          const data = await fs.readFile(path.resolve(root, part.path));
          content.push({
            type: "image",
            source: { type: "base64", media_type: part.mimeType ?? mimeOf(part.path), data: data.toString("base64") },
          });
        } catch (error) {
          content.push({ type: "text", text: `[image ${part.path} could not be read: ${(error as Error).message}]` });
        }
        break;
      }
    }
  }
  return { type: "user", message: { role: "user", content }, parent_tool_use_id: null, session_id: sessionId ?? "" };
}

function mimeOf(file: string): string {
  const ext = path.extname(file).toLowerCase();
  return ext === ".jpg" || ext === ".jpeg" ? "image/jpeg" : ext === ".gif" ? "image/gif" : ext === ".webp" ? "image/webp" : "image/png";
}
