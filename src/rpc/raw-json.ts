// Pre-serialized JSON inside a result. Large reads (a thread with 20,000 items) splice the
// stored JSON text of each item into the response instead of parsing it only to serialize it
// again, which is most of the work and of the garbage.
import { randomUUID } from "node:crypto";

export class RawJson {
  constructor(readonly json: string) {}
}

// A per-process marker: no string a client or model wrote can collide with it.
const MARK = `\u0000raw-${randomUUID()}:`;
const PLACEHOLDER = new RegExp(
  `"${JSON.stringify(MARK)
    .slice(1, -1)
    .replace(/[\\^$.*+?()[\]{}|]/g, "\\$&")}(\\d+)"`,
  "g",
);

/** JSON.stringify that writes every RawJson it meets as its text, unchanged. */
export function stringifyWithRaw(value: unknown): string {
  const raw: string[] = [];
  const text = JSON.stringify(value, (_key, v: unknown) => (v instanceof RawJson ? MARK + (raw.push(v.json) - 1) : v));
  return raw.length === 0 ? text : text.replace(PLACEHOLDER, (_match, index: string) => raw[Number(index)]!);
}
