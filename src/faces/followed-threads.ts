// The threads one connection follows (started, resumed or turn-started on it): it is sent their
// events from the moment it began following, and is asked their approvals.
import type { RuntimeEvent } from "../domain/events.js";
import type { RuntimeApi } from "../runtime/api.js";

export class FollowedThreads {
  /** Each followed thread, with the last seq there was when following began. */
  private readonly from = new Map<string, number>();

  constructor(private readonly runtime: Pick<RuntimeApi, "lastSeq">) {}

  /** Follows a thread from now on: events appended before this call are not sent. */
  follow(threadId: string): void {
    if (!this.from.has(threadId)) this.from.set(threadId, this.runtime.lastSeq(threadId));
  }

  has(threadId: string): boolean {
    return this.from.has(threadId);
  }

  /** Whether the connection is sent this event. */
  wants(event: RuntimeEvent): boolean {
    const from = this.from.get(event.threadId);
    return from !== undefined && event.seq > from;
  }

  /** Called as each event is sent: a deleted thread is followed no longer. */
  sent(event: RuntimeEvent): void {
    if (event.type === "thread.deleted") this.from.delete(event.threadId);
  }
}
