// The threads one connection follows: it is sent their events and asked their approvals. Each
// is held with the runtime while followed (RuntimeApi.follow): in a cluster, that is what brings
// other nodes' deltas of the thread to this one.
import type { RuntimeEvent } from "../domain/events.js";
import type { RuntimeApi } from "../runtime/api.js";

/** The threads a connection subscribes to (the AppServer face: its feed decides what is sent). */
export class Subscriptions {
  private readonly held = new Map<string, () => void>();

  constructor(protected readonly runtime: Pick<RuntimeApi, "follow" | "lastSeq">) {}

  add(threadId: string): void {
    if (!this.held.has(threadId)) this.held.set(threadId, this.runtime.follow(threadId));
  }

  has(threadId: string): boolean {
    return this.held.has(threadId);
  }

  delete(threadId: string): boolean {
    this.held.get(threadId)?.();
    return this.held.delete(threadId);
  }

  /** The connection went: it follows nothing. */
  close(): void {
    for (const threadId of [...this.held.keys()]) this.delete(threadId);
  }
}

/**
 * The threads a connection follows from the moment it began (started, resumed or turn-started
 * on it): events appended before are not sent. The claude and codex faces.
 */
export class FollowedThreads extends Subscriptions {
  /** The last seq there was when following began, per thread. */
  private readonly from = new Map<string, number>();

  /** Follows a thread from now on. */
  follow(threadId: string): void {
    if (this.has(threadId)) return;
    this.from.set(threadId, this.runtime.lastSeq(threadId));
    this.add(threadId);
  }

  override delete(threadId: string): boolean {
    this.from.delete(threadId);
    return super.delete(threadId);
  }

  /** Whether the connection is sent this event. */
  wants(event: RuntimeEvent): boolean {
    const from = this.from.get(event.threadId);
    return from !== undefined && event.seq > from;
  }

  /** Called as each event is sent: a deleted thread is followed no longer. */
  sent(event: RuntimeEvent): void {
    if (event.type === "thread.deleted") this.delete(event.threadId);
  }
}
