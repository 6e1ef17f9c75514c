// Lookups by key asked for in the same turn of the event loop, answered by one query.

interface Asker<V> {
  resolve: (value: V | undefined) => void;
  reject: (error: unknown) => void;
}

/**
 * `get(key)` answers from one `fetch` of every key asked for before the current microtasks
 * ran out: a connection that makes a hundred turn-end notifications at once (turns that ended
 * together) reads the database once, not a hundred times through a pool of a few connections.
 */
export class BatchedLookup<K, V> {
  private asked: Map<K, Asker<V>[]> | undefined;

  constructor(private readonly fetch: (keys: K[]) => Promise<Map<K, V>>) {}

  get(key: K): Promise<V | undefined> {
    return new Promise((resolve, reject) => {
      if (!this.asked) {
        this.asked = new Map();
        queueMicrotask(() => void this.run());
      }
      const askers = this.asked.get(key);
      if (askers) askers.push({ resolve, reject });
      else this.asked.set(key, [{ resolve, reject }]);
    });
  }

  private async run(): Promise<void> {
    const asked = this.asked!;
    this.asked = undefined;
    try {
      const found = await this.fetch([...asked.keys()]);
      for (const [key, askers] of asked) for (const asker of askers) asker.resolve(found.get(key));
    } catch (error) {
      for (const askers of asked.values()) for (const asker of askers) asker.reject(error);
    }
  }
}
