// A background job that runs again when asked during a run, never twice at once.
import { setTimeout as sleep } from "node:timers/promises";

/**
 * Runs `work`, or once more after the run in progress: calls in between coalesce into one.
 * With `spacingMs`, a run starts no sooner than that after the previous one started.
 */
export class Coalesced {
  private running: Promise<void> | undefined;
  private again = false;
  /** When the latest run started (performance.now()). */
  private lastStart = -Infinity;

  constructor(
    private readonly work: () => Promise<void>,
    private readonly spacingMs = 0,
  ) {}

  run(): Promise<void> {
    if (this.running) {
      this.again = true;
      return this.running;
    }
    this.running = (async () => {
      do {
        // Checked again after each sleep: a timer may fire a little early by performance.now()
        // (libuv's clock is read once per turn of the event loop).
        let wait: number;
        while ((wait = this.lastStart + this.spacingMs - performance.now()) > 0) await sleep(wait);
        this.again = false; // asks made while waiting are served by this run
        this.lastStart = performance.now();
        await this.work();
      } while (this.again);
    })().finally(() => (this.running = undefined));
    return this.running;
  }

  /** When the latest run started (performance.now()): the time the spacing counts from. */
  get startedAt(): number {
    return this.lastStart;
  }

  /** Whether a run is in progress. */
  get busy(): boolean {
    return this.running !== undefined;
  }

  idle(): Promise<void> {
    return this.running?.catch(() => undefined) ?? Promise.resolve();
  }
}
