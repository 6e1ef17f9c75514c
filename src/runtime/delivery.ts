// Delivery of committed events to the runtime's listeners (the faces). Listeners get events on
// the next tick, never from inside a call: a request's answer always goes out before the
// events it caused, and a read that commits events cannot deliver them in the middle of
// another face's work.
import type { Logger } from "../log.js";
import type { RuntimeEvent } from "../domain/events.js";
import type { Store } from "../store/store.js";

export type RuntimeListener = (event: RuntimeEvent) => void;

export class EventDelivery {
  private readonly listeners = new Set<RuntimeListener>();
  /** Committed events not yet handed to listeners. */
  private readonly outbox: RuntimeEvent[] = [];
  private scheduled = false;
  private readonly waiters: Array<() => void> = [];

  constructor(
    private readonly store: Store,
    private readonly log: Logger,
  ) {
    store.onCommit((events) => {
      this.outbox.push(...events);
      this.schedule();
    });
  }

  /** Receives every event once it is committed to the log, in seq order. */
  subscribe(listener: RuntimeListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Commits what is pending and resolves once listeners have received it. */
  async delivered(): Promise<void> {
    await this.store.flush();
    if (!this.scheduled) return;
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => this.deliver());
  }

  private deliver(): void {
    this.scheduled = false;
    for (const event of this.outbox.splice(0)) {
      for (const listener of this.listeners) {
        try {
          listener(event);
        } catch (error) {
          this.log.error({ err: error, event: event.type }, "event listener failed");
        }
      }
    }
    for (const resolve of this.waiters.splice(0)) resolve();
  }
}
