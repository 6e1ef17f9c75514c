// Bearer tokens of the HTTP endpoints (the Hub, webhook channels, the WebSocket listener):
// reading one from a header, and comparing secrets in constant time.
import { createHash, timingSafeEqual } from "node:crypto";

/** The token of an `Authorization: Bearer <token>` header, if it is one. */
export function bearerToken(header: string | undefined): string | undefined {
  return /^Bearer\s+(\S+)\s*$/i.exec(header ?? "")?.[1];
}

/** Compares fixed-length digests, so the time taken says nothing about either value. */
export function sameSecret(given: string, expected: string): boolean {
  const digest = (value: string): Buffer => createHash("sha256").update(value, "utf8").digest();
  return timingSafeEqual(digest(given), digest(expected));
}
