// Ports for servers that must be told theirs before they start (tests that restart a server on
// the same port, or pass --port as a client would).
import { readFileSync } from "node:fs";
import net from "node:net";

/**
 * Where the ports the OS gives outgoing connections begin. A port from that range that is free
 * now (listen(0) hands out exactly those) can be taken by any connection before the server binds
 * it: with test files running in parallel, a server failed with EADDRINUSE. Linux reads it from
 * /proc; macOS's range starts at 49152, above the default.
 */
function ephemeralStart(): number {
  try {
    return Number(readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8").trim().split(/\s+/)[0]) || 32768;
  } catch {
    return 32768;
  }
}

function bindable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = net.createServer();
    probe.once("error", () => resolve(false));
    probe.listen(port, "127.0.0.1", () => probe.close(() => resolve(true)));
  });
}

/**
 * A TCP port free on 127.0.0.1 now, below the ephemeral range, picked at random, above 10080:
 * the last of the Fetch standard's "bad ports", which Node's fetch and browsers refuse to
 * connect to (a relay given 10080 took WebSockets, and its login failed with "fetch failed").
 */
export async function freePort(): Promise<number> {
  const low = 10_081;
  const high = Math.max(ephemeralStart(), low + 1_000);
  for (;;) {
    const port = low + Math.floor(Math.random() * (high - low));
    if (await bindable(port)) return port;
  }
}
