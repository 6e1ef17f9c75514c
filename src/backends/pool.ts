// One long-lived agent session per thread while the thread is in use: reused across turns,
// replaced when the thread's backend spec changes, stopped after an idle timeout, on release
// (thread deleted) and on shutdown.

export interface PooledSession {
  /** False once the agent behind it has gone; the pool then starts a new one. */
  readonly alive: boolean;
  close(): Promise<void>;
}

export class SessionPool<S extends PooledSession> {
  private readonly entries = new Map<string, { session: Promise<S>; key: string; busy: number; timer?: NodeJS.Timeout }>();

  constructor(private readonly idleTimeoutMs: number) {}

  /**
   * Runs `fn` with the thread's session, creating it when there is none, when it died, or when
   * `key` (what the session was made from, e.g. the spec as JSON) changed.
   */
  async use<T>(threadId: string, key: string, create: () => Promise<S>, fn: (session: S) => Promise<T>): Promise<T> {
    let entry = this.entries.get(threadId);
    if (entry && (entry.key !== key || !(await settledAlive(entry.session)))) {
      this.entries.delete(threadId);
      clearTimeout(entry.timer);
      await closeQuietly(entry.session);
      entry = undefined;
    }
    if (!entry) {
      entry = { session: create(), key, busy: 0 };
      this.entries.set(threadId, entry);
      // A session that failed to start is not kept.
      entry.session.catch(() => {
        if (this.entries.get(threadId) === entry) this.entries.delete(threadId);
      });
    }
    clearTimeout(entry.timer);
    entry.busy++;
    try {
      return await fn(await entry.session);
    } finally {
      entry.busy--;
      if (entry.busy === 0 && this.entries.get(threadId) === entry) {
        const idle = entry;
        idle.timer = setTimeout(() => void this.release(threadId, idle), this.idleTimeoutMs);
        idle.timer.unref();
      }
    }
  }

  /** Stops the thread's session now. */
  async release(threadId: string, only?: unknown): Promise<void> {
    const entry = this.entries.get(threadId);
    if (!entry || (only !== undefined && only !== entry)) return;
    this.entries.delete(threadId);
    clearTimeout(entry.timer);
    await closeQuietly(entry.session);
  }

  async closeAll(): Promise<void> {
    await Promise.all([...this.entries.keys()].map((id) => this.release(id)));
  }

  /** Threads with a live session (for tests and diagnostics). */
  get size(): number {
    return this.entries.size;
  }
}

async function settledAlive<S extends PooledSession>(session: Promise<S>): Promise<boolean> {
  try {
    return (await session).alive;
  } catch {
    return false;
  }
}

async function closeQuietly<S extends PooledSession>(session: Promise<S>): Promise<void> {
  try {
    await (await session).close();
  } catch {
    // It failed to start or is already gone.
  }
}
