// A push-fed async iterator: the client pushes events in, a `for await` loop takes them out.
// Unbounded on purpose: dropping events would break the client's no-gaps promise, and a
// consumer that stops reading should break out of its loop (which unregisters the stream).

export class EventStream<T> implements AsyncIterableIterator<T> {
  private readonly buffer: T[] = [];
  private readonly waiting: Array<(result: IteratorResult<T, undefined>) => void> = [];
  private ended = false;

  constructor(private readonly onEnd: () => void) {}

  push(value: T): void {
    if (this.ended) return;
    const take = this.waiting.shift();
    if (take) take({ value, done: false });
    else this.buffer.push(value);
  }

  /** Ends the stream; events already buffered are still delivered. */
  end(): void {
    if (this.ended) return;
    this.ended = true;
    for (const take of this.waiting.splice(0)) take({ value: undefined, done: true });
    this.onEnd();
  }

  next(): Promise<IteratorResult<T, undefined>> {
    if (this.buffer.length > 0) return Promise.resolve({ value: this.buffer.shift()!, done: false });
    if (this.ended) return Promise.resolve({ value: undefined, done: true });
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  /** Called by `break` in a for-await loop. */
  return(): Promise<IteratorResult<T, undefined>> {
    this.buffer.length = 0;
    this.end();
    return Promise.resolve({ value: undefined, done: true });
  }

  [Symbol.asyncIterator](): this {
    return this;
  }
}
