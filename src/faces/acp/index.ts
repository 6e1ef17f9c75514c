// The ACP face: Switchyard's runtime served as an Agent Client Protocol agent, over a
// newline-delimited JSON byte stream (the process's stdin/stdout for `switchyard acp`). It uses
// the official SDK's app API; the protocol types are the SDK's own.
import { Readable, Writable } from "node:stream";
import { ndJsonStream } from "@agentclientprotocol/sdk";
import type { Logger } from "../../log.js";
import type { Runtime } from "../../runtime/runtime.js";
import { AcpSession } from "./session.js";

export interface AcpFaceOptions {
  runtime: Runtime;
  log: Logger;
  serverVersion: string;
  input: NodeJS.ReadableStream;
  output: NodeJS.WritableStream;
}

/** Serves one ACP client; resolves when its connection has closed (e.g. stdin ended). */
export function startAcpFace(options: AcpFaceOptions): Promise<void> {
  const stream = ndJsonStream(
    Writable.toWeb(options.output as Writable) as WritableStream<Uint8Array>,
    Readable.toWeb(options.input as Readable) as ReadableStream<Uint8Array>,
  );
  return new AcpSession(options.runtime, options.serverVersion, options.log).serve(stream);
}
