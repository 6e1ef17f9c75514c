// Identifiers: a prefix, a time component that sorts, and randomness. The randomness comes from
// the global Web Crypto, loaded on first use: importing node:crypto cost every start ~2 ms.

let lastTime = 0;
let counter = 0;

/** e.g. newId("turn") -> "turn_m3x9k2a1_00_5f2c9d1e". Sorts by creation time within a process. */
export function newId(prefix: string): string {
  return `${prefix}_${timeAndSequence()}_${randomHex(4)}`;
}

/**
 * An id unique among the live processes of one machine (time, sequence and pid) that needs no
 * randomness: for what exists only while this process runs, such as a connection.
 */
export function newLocalId(prefix: string): string {
  return `${prefix}_${timeAndSequence()}_${process.pid.toString(36)}`;
}

function timeAndSequence(): string {
  const now = Date.now();
  counter = now === lastTime ? counter + 1 : 0;
  lastTime = now;
  return now.toString(36) + counter.toString(36).padStart(2, "0");
}

function randomHex(bytes: number): string {
  return Buffer.from(crypto.getRandomValues(new Uint8Array(bytes))).toString("hex");
}

/** Thread ids carry the creation date, as in the protocol's examples (thread_20260316_x7k2m4...). */
export function newThreadId(date = new Date()): string {
  const day = date.toISOString().slice(0, 10).replaceAll("-", "");
  return `thread_${day}_${randomHex(6)}`;
}
