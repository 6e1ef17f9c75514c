// Pre-serialized JSON inside a result. Large reads (a thread with 20,000 items) splice the
// stored JSON text of each item into the response instead of parsing it only to serialize it
// again, which is most of the work and of the garbage.
/** JSON text sent verbatim; `T` is the value it encodes, so typed handlers can check it. */
export class RawJson<T = unknown> {
  declare readonly encodes?: T;
  constructor(readonly json: string) {}
}

/** The stored JSON text of a `T`, to be spliced verbatim by stringifyWithRaw; typed as the `T` it encodes. */
export function rawJsonAs<T>(json: string): T {
  return new RawJson<T>(json) as unknown as T;
}

/** A whole result serialized once, with its RawJson parts spliced in. */
export function rawResult<T>(value: T): RawJson<T> {
  return new RawJson<T>(stringifyWithRaw(value));
}

/**
 * A per-process marker, so that no string a client or model wrote can collide with it. Made on
 * first use, from the global Web Crypto: importing node:crypto cost every start ~2 ms, and the
 * start-up path sends no RawJson.
 */
let marker: { text: string; placeholder: RegExp } | undefined;
function rawMarker(): { text: string; placeholder: RegExp } {
  if (!marker) {
    const text = `\u0000raw-${crypto.randomUUID()}:`;
    const escaped = JSON.stringify(text)
      .slice(1, -1)
      .replace(/[\\^$.*+?()[\]{}|]/g, "\\$&");
    marker = { text, placeholder: new RegExp(`"${escaped}(\\d+)"`, "g") };
  }
  return marker;
}

/** JSON.stringify that writes every RawJson it meets as its text, unchanged. */
export function stringifyWithRaw(value: unknown): string {
  const raw: string[] = [];
  const text = JSON.stringify(value, (_key, v: unknown) => (v instanceof RawJson ? rawMarker().text + (raw.push(v.json) - 1) : v));
  return raw.length === 0 ? text : text.replace(rawMarker().placeholder, (_match, index: string) => raw[Number(index)]!);
}
