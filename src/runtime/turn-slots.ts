// How many turns run at once in this process (--max-running-turns). A turn over the limit has
// started (its client has the answer and sees it running) and waits here, first come first
// served, until a running one ends.
export class TurnSlots {
  private running = 0;
  private readonly waiting: Array<() => void> = [];

  /** `max` undefined: no limit. */
  constructor(private readonly max: number | undefined) {}

  /** Takes a slot if one is free now. */
  tryTake(): boolean {
    if (this.max === undefined) return true;
    if (this.running >= this.max) return false;
    this.running++;
    return true;
  }

  /** Resolves true once the turn may run; false when `signal` aborts first (interrupted while it waited). */
  take(signal: AbortSignal): Promise<boolean> {
    if (this.max === undefined) return Promise.resolve(true);
    if (signal.aborted) return Promise.resolve(false);
    if (this.tryTake()) return Promise.resolve(true);
    return new Promise((resolve) => {
      const grant = (): void => {
        signal.removeEventListener("abort", cancel);
        this.running++;
        resolve(true);
      };
      const cancel = (): void => {
        this.waiting.splice(this.waiting.indexOf(grant), 1);
        resolve(false);
      };
      this.waiting.push(grant);
      signal.addEventListener("abort", cancel, { once: true });
    });
  }

  /** A turn that took a slot ended: the longest-waiting turn runs. */
  release(): void {
    if (this.max === undefined) return;
    this.running--;
    this.waiting.shift()?.();
  }
}
