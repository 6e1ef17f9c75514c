// switchyard/client: a typed client for the AppServer protocol, over stdio or WebSocket.
//
//   const client = await SwitchyardClient.connect({ transport: "websocket", url: "ws://127.0.0.1:3284/ws" });
//   const { thread } = await client.startThread({ identity: { workspacePath: process.cwd() } });
//   const { turn } = await client.startTurn(thread.id, "Summarize this repository.");
//   for await (const event of client.events(thread.id)) { ... }
//
// See docs/client.md.
export { SwitchyardClient, backoffDelay, type RequestOptions } from "./client.js";
export { ConnectionClosedError, RequestTimeoutError } from "../rpc/connection.js";
export { RpcError } from "../rpc/errors.js";
export { AppServerErrorCode as ErrorCode } from "../faces/appserver/errors.js";
export type * from "./types.js";
