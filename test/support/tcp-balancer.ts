// A TCP load balancer for tests, as one put in front of a cluster's nodes: each connection goes
// to the next upstream in turn, or past it to the one after when it refuses (a node that is down).
import net from "node:net";

export interface Balancer {
  /** Where clients connect. */
  port: number;
  close(): Promise<void>;
}

export async function startBalancer(upstreams: readonly URL[]): Promise<Balancer> {
  let next = 0;
  const open = new Set<net.Socket>();
  const track = (socket: net.Socket): void => {
    open.add(socket);
    socket.once("close", () => open.delete(socket));
  };
  const server = net.createServer((client) => {
    track(client);
    client.pause();
    client.on("error", () => undefined);
    const connect = (tries: number): void => {
      if (tries === 0) return void client.destroy();
      const target = upstreams[next++ % upstreams.length]!;
      const upstream = net.connect(Number(target.port), target.hostname);
      track(upstream);
      let connected = false;
      upstream.once("connect", () => {
        connected = true;
        client.pipe(upstream).pipe(client);
        client.resume();
      });
      upstream.on("error", () => (connected ? client.destroy() : connect(tries - 1)));
      upstream.once("close", () => connected && client.destroy());
      client.once("close", () => upstream.destroy());
    };
    connect(upstreams.length);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    close: () =>
      new Promise((resolve) => {
        for (const socket of open) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
