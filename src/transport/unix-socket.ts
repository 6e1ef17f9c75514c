// The Unix socket transport: JSON Lines over a local stream socket, owner-only. The listener
// recovers the socket file a dead server left behind and refuses to take over a live one.
import { chmodSync, rmSync } from "node:fs";
import net from "node:net";
import type { MessageChannel } from "./channel.js";
import { createStdioChannel } from "./stdio.js";

export interface UnixSocketServer {
  readonly path: string;
  close(): Promise<void>;
}

/** Another server answers on the socket. */
export class SocketInUseError extends Error {
  constructor(readonly socketPath: string) {
    super(`Another server is listening on ${socketPath}.`);
  }
}

/** Whether something accepts connections on the socket (false for a stale file or none). */
export function socketAnswers(socketPath: string, timeoutMs = 1_000): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(socketPath);
    const done = (answers: boolean): void => {
      socket.destroy();
      resolve(answers);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once("connect", () => done(true));
    socket.once("error", () => done(false));
  });
}

export async function listenUnixSocket(
  socketPath: string,
  onChannel: (channel: MessageChannel) => void,
  opts: { maxMessageBytes: number },
): Promise<UnixSocketServer> {
  if (await socketAnswers(socketPath)) throw new SocketInUseError(socketPath);
  rmSync(socketPath, { force: true }); // a dead server's socket file
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.once("close", () => sockets.delete(socket));
    onChannel(socketChannel(socket, socketPath, opts));
  });
  // Owner-only from the moment it exists: the umask covers the window before chmod.
  const umask = process.umask(0o177);
  try {
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(socketPath, () => {
        server.off("error", reject);
        resolve();
      });
    });
  } finally {
    process.umask(umask);
  }
  chmodSync(socketPath, 0o600);
  return {
    path: socketPath,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve()); // also removes the socket file
      }),
  };
}

/** Connects to a Unix socket server; rejects with the connect error (ENOENT, ECONNREFUSED). */
export function connectUnixSocket(socketPath: string, opts: { maxMessageBytes: number }): Promise<MessageChannel> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(socketPath);
    socket.once("error", reject);
    socket.once("connect", () => {
      socket.off("error", reject);
      resolve(socketChannel(socket, socketPath, opts));
    });
  });
}

/** JSON Lines over the socket; closing the channel ends the connection (pending output still goes). */
function socketChannel(socket: net.Socket, socketPath: string, opts: { maxMessageBytes: number }): MessageChannel {
  const channel = createStdioChannel(socket, socket, { ...opts, info: { transport: "unix", remote: socketPath } });
  channel.onClose(() => socket.end());
  return channel;
}
