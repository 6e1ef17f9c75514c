// Process watching for AgentCraft instances: pid liveness by polling `kill(pid, 0)` (the only
// way to follow a process this daemon did not spawn), and the acp-service restart backoff.
import { pidAlive } from "../../pid.js";

export class ProcessWatcher {
  private readonly watched = new Map<string, number>();
  private timer: NodeJS.Timeout | undefined;
  private polling = false;

  constructor(
    private readonly intervalMs: number,
    private readonly onExit: (name: string, pid: number) => void | Promise<void>,
    private readonly onError: (error: unknown) => void,
  ) {}

  watch(name: string, pid: number): void {
    this.watched.set(name, pid);
    this.timer ??= setInterval(() => void this.poll(), this.intervalMs);
    this.timer.unref();
  }

  /** Before an intentional stop or detach, so it is not taken for a crash. */
  unwatch(name: string): void {
    this.watched.delete(name);
    if (this.watched.size === 0) this.close();
  }

  close(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  private async poll(): Promise<void> {
    if (this.polling) return;
    this.polling = true;
    try {
      for (const [name, pid] of [...this.watched]) {
        if (pidAlive(pid)) continue;
        // Removed first: the handler may watch the name again (a restart).
        this.watched.delete(name);
        try {
          await this.onExit(name, pid);
        } catch (error) {
          this.onError(error);
        }
      }
    } finally {
      this.polling = false;
    }
  }
}

export interface RestartPolicy {
  maxRestarts: number;
  baseDelayMs: number;
  maxDelayMs: number;
  /** Running this long without a crash resets the count. */
  stableAfterMs: number;
}

export const DEFAULT_RESTART_POLICY: RestartPolicy = { maxRestarts: 5, baseDelayMs: 1_000, maxDelayMs: 60_000, stableAfterMs: 300_000 };

/** Counts an acp-service agent's restarts: 1 s × 2^n, capped, at most maxRestarts, reset when stable. */
export class RestartTracker {
  private readonly state = new Map<string, { count: number; lastStartAt: number }>();

  constructor(private readonly policy: RestartPolicy = DEFAULT_RESTART_POLICY) {}

  /** The delay before the next restart, or undefined when the agent has used up its restarts. */
  next(name: string, now = Date.now()): number | undefined {
    const entry = this.state.get(name) ?? { count: 0, lastStartAt: now };
    if (now - entry.lastStartAt >= this.policy.stableAfterMs) entry.count = 0;
    if (entry.count >= this.policy.maxRestarts) return undefined;
    const delay = Math.min(this.policy.baseDelayMs * 2 ** entry.count, this.policy.maxDelayMs);
    entry.count++;
    this.state.set(name, entry);
    return delay;
  }

  started(name: string, now = Date.now()): void {
    const entry = this.state.get(name);
    if (entry) entry.lastStartAt = now;
  }

  forget(name: string): void {
    this.state.delete(name);
  }
}
