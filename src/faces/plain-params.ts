// The checks the faces' early handshakes (*/handshake.ts) make of a request's params before any
// schema has loaded: each stricter than its protocol's schema, never looser.

export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** `value` is absent or of `type`. */
export function optional(value: unknown, type: "string" | "boolean"): boolean {
  return value === undefined || typeof value === type;
}

/** `value` has no keys but `keys`. */
export function onlyKeys(value: Record<string, unknown>, keys: string[]): boolean {
  return Object.keys(value).every((key) => keys.includes(key));
}
