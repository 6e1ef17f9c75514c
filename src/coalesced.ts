// A background job that runs again when asked during a run, never twice at once.
/** Runs `work`, or once more after the run in progress: calls in between coalesce into one. */
export class Coalesced {
  private running: Promise<void> | undefined;
  private again = false;

  constructor(private readonly work: () => Promise<void>) {}

  run(): Promise<void> {
    if (this.running) {
      this.again = true;
      return this.running;
    }
    this.running = (async () => {
      do {
        this.again = false;
        await this.work();
      } while (this.again);
    })().finally(() => (this.running = undefined));
    return this.running;
  }

  /** Whether a run is in progress. */
  get busy(): boolean {
    return this.running !== undefined;
  }

  idle(): Promise<void> {
    return this.running?.catch(() => undefined) ?? Promise.resolve();
  }
}
