// Whether a host name or address is this machine's loopback: what the transports may bind
// without a token, and where a provider's endpoint is asked without a network round trip.
import { isIPv4 } from "node:net";

export function isLoopbackHost(host: string): boolean {
  let h = unbracket(host.trim().toLowerCase());
  if (h === "localhost" || h === "::1" || h === "0:0:0:0:0:0:0:1") return true;
  if (h.startsWith("::ffff:")) h = h.slice("::ffff:".length); // IPv4-mapped IPv6
  return isIPv4(h) && h.startsWith("127.");
}

/** "[::1]" → "::1": URL hostnames keep an IPv6 address's brackets. */
export function unbracket(host: string): string {
  return host.startsWith("[") && host.endsWith("]") ? host.slice(1, -1) : host;
}
