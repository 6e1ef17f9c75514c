// The AgentCraft CLI's RPC client: one connection to the daemon's socket, typed by the
// protocol table, with the spec's 10 s timeout (prompts wait as long as the agent works).
import type { z } from "zod";
import { RpcConnection, type RpcHandlers } from "../../rpc/connection.js";
import { RpcError } from "../../rpc/errors.js";
import type { AgentCraftRequests } from "../../faces/agentcraft/protocol.js";
import { connectUnixSocket } from "../../transport/unix-socket.js";

export type Method = keyof typeof AgentCraftRequests;
export type Params<M extends Method> = z.input<(typeof AgentCraftRequests)[M]["params"]>;
export type Result<M extends Method> = z.output<(typeof AgentCraftRequests)[M]["result"]>;

export const CLIENT_TIMEOUT_MS = 10_000;
/** Methods that last as long as an agent works on a prompt. */
const LONG_METHODS = new Set<Method>([
  "agent.run",
  "agent.prompt",
  "session.prompt",
  "agent.start",
  "agent.stop",
  "agent.destroy",
  "proxy.forward",
]);

/** The daemon does not answer on its socket. */
export class ConnectionError extends Error {
  constructor(
    readonly socketPath: string,
    cause: unknown,
  ) {
    super(`The AgentCraft daemon is not running (nothing answers on ${socketPath}). Start it with: agentcraft daemon start`, { cause });
  }
}

export class DaemonClient {
  private constructor(private readonly connection: RpcConnection) {}

  static async connect(socketPath: string, handlers: Partial<RpcHandlers> = {}): Promise<DaemonClient> {
    let channel;
    try {
      channel = await connectUnixSocket(socketPath, { maxMessageBytes: 16 * 1024 * 1024 });
    } catch (error) {
      throw new ConnectionError(socketPath, error);
    }
    const connection = new RpcConnection(channel, {
      onRequest:
        handlers.onRequest ??
        ((method) => {
          throw new RpcError(-32601, `Method not found: ${method}`);
        }),
      ...(handlers.onNotification ? { onNotification: handlers.onNotification } : {}),
    });
    return new DaemonClient(connection);
  }

  call<M extends Method>(method: M, params: Params<M>, opts: { timeoutMs?: number } = {}): Promise<Result<M>> {
    const timeoutMs = opts.timeoutMs ?? (LONG_METHODS.has(method) ? 0 : CLIENT_TIMEOUT_MS);
    return this.connection.request<Result<M>>(method, params, { timeoutMs });
  }

  onClose(listener: () => void): void {
    this.connection.onClose(listener);
  }

  close(): void {
    this.connection.close();
  }
}

/** Connects, makes one call, and disconnects. */
export async function callOnce<M extends Method>(socketPath: string, method: M, params: Params<M>): Promise<Result<M>> {
  const client = await DaemonClient.connect(socketPath);
  try {
    return await client.call(method, params);
  } finally {
    client.close();
  }
}

/** An error as §5.5 shows it: daemon not running, then RPC errors with their codes. */
export function describeError(error: unknown): string {
  if (error instanceof ConnectionError) return error.message;
  if (error instanceof RpcError) {
    const data = error.data as { errorCode?: string; context?: unknown } | undefined;
    const code = data?.errorCode ? `${data.errorCode} (${error.code})` : String(error.code);
    const context = data?.context && Object.keys(data.context).length > 0 ? `\n  context: ${JSON.stringify(data.context)}` : "";
    return `${code}: ${error.message}${context}`;
  }
  return error instanceof Error ? error.message : String(error);
}
