// Identifiers: a prefix, a time component that sorts, and randomness.
import { randomBytes } from "node:crypto";

let lastTime = 0;
let counter = 0;

/** e.g. newId("turn") -> "turn_m3x9k2a1_00_5f2c9d1e". Sorts by creation time within a process. */
export function newId(prefix: string): string {
  const now = Date.now();
  counter = now === lastTime ? counter + 1 : 0;
  lastTime = now;
  const time = now.toString(36);
  const seq = counter.toString(36).padStart(2, "0");
  return `${prefix}_${time}${seq}_${randomBytes(4).toString("hex")}`;
}

/** Thread ids carry the creation date, as in the protocol's examples (thread_20260316_x7k2m4...). */
export function newThreadId(date = new Date()): string {
  const day = date.toISOString().slice(0, 10).replaceAll("-", "");
  return `thread_${day}_${randomBytes(6).toString("hex")}`;
}
