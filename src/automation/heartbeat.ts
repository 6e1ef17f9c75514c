// The workspace heartbeat: the prompt in the workspace's HEARTBEAT.md, run periodically (when
// `.craft/config.json` has `heartbeat: {enabled: true, intervalMinutes}`) and on demand
// (heartbeat/trigger), on the workspace's heartbeat thread (one per workspace, made on first use).
import fs from "node:fs";
import path from "node:path";
import type { Logger } from "../log.js";
import type { RuntimeApi } from "../runtime/api.js";
import { readSettings } from "../workspace/settings.js";
import type { CronService } from "./cron.js";
import { channelThread, failedOutcome, runPrompt } from "./run-prompt.js";

export const HEARTBEAT_FILE = "HEARTBEAT.md";
const CHANNEL = "heartbeat";

type Runtime = Pick<RuntimeApi, "subscribe" | "startTurn" | "listThreads" | "startThread">;

export class HeartbeatService {
  private readonly timers = new Map<string, NodeJS.Timeout>();

  constructor(
    private readonly runtime: Runtime,
    private readonly cron: Pick<CronService, "announceResult">,
    private readonly log: Logger,
  ) {}

  /** Runs the heartbeat now: result null when HEARTBEAT.md is missing or empty. */
  async trigger(workspacePath: string): Promise<{ result: string | null; error: string | null; threadId?: string }> {
    let prompt: string;
    try {
      prompt = fs.readFileSync(path.join(workspacePath, HEARTBEAT_FILE), "utf8").trim();
    } catch {
      return { result: null, error: null };
    }
    if (!prompt) return { result: null, error: null };
    const threadId = await channelThread(this.runtime, { workspacePath, originChannel: CHANNEL, displayName: "Heartbeat" });
    const outcome = await runPrompt(this.runtime, threadId, prompt).catch(failedOutcome);
    this.cron.announceResult({
      source: "heartbeat",
      threadId,
      ...(outcome.turnId ? { turnId: outcome.turnId } : {}),
      result: outcome.text,
      error: outcome.error,
    });
    return { result: outcome.text, error: outcome.error, threadId };
  }

  /** Starts the periodic heartbeat of a workspace if its settings turn it on. */
  startFromSettings(workspacePath: string): void {
    let settings: { enabled?: unknown; intervalMinutes?: unknown } | undefined;
    try {
      settings = readSettings(workspacePath).heartbeat as typeof settings;
    } catch (error) {
      this.log.warn({ err: error }, "heartbeat settings unreadable");
      return;
    }
    const minutes = Number(settings?.intervalMinutes);
    if (settings?.enabled !== true || !(minutes > 0)) return;
    clearInterval(this.timers.get(workspacePath));
    const timer = setInterval(() => {
      this.trigger(workspacePath).catch((error: unknown) => this.log.error({ err: error }, "heartbeat failed"));
    }, minutes * 60_000);
    timer.unref();
    this.timers.set(workspacePath, timer);
    this.log.info({ workspacePath, intervalMinutes: minutes }, "heartbeat started");
  }

  close(): void {
    for (const timer of this.timers.values()) clearInterval(timer);
    this.timers.clear();
  }
}
