// setTimeout with a delay of any size. Node fires a timer after ~1 ms when its delay is over
// 2^31-1 ms (24.8 days), which would turn a "practically never" timeout into "at once".
export const MAX_TIMER_MS = 2 ** 31 - 1;

export function setBoundedTimeout(callback: () => void, ms: number): NodeJS.Timeout {
  return setTimeout(callback, Math.min(ms, MAX_TIMER_MS));
}

/** Resolves after `ms`; the timer does not keep the process alive. */
export function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setBoundedTimeout(resolve, ms).unref());
}
