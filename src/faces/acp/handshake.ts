// The ACP face's answer to initialize, apart from the SDK: a client's first request, waiting on
// stdin when the server starts (editors send it at once), is answered before the ACP SDK (its
// schemas take ~35 ms to build) and the runtime load. The SDK still reads it, and its answer
// is left out; anything but a plain initialize is the SDK's alone.
import { PassThrough, Transform, type Readable } from "node:stream";
import { isObject, onlyKeys, optional } from "../plain-params.js";

/** The SDK's PROTOCOL_VERSION (a test holds the two together). */
export const ACP_PROTOCOL_VERSION = 1;

/** The result of initialize, the same whether this module or the SDK answers it. */
export function initializeResult(serverVersion: string) {
  return {
    protocolVersion: ACP_PROTOCOL_VERSION,
    agentCapabilities: {
      loadSession: true,
      // Images reach the built-in engine as references only, so they are not offered.
      promptCapabilities: { image: false, audio: false, embeddedContext: true },
      mcpCapabilities: { http: false, sse: false },
      sessionCapabilities: { list: {}, resume: {}, close: {} },
    },
    agentInfo: { name: "switchyard", title: "Switchyard", version: serverVersion },
    authMethods: [],
  };
}

/**
 * The id of `line` when it is an initialize request of the plain shape clients send, which the
 * SDK's schema certainly accepts; else undefined. Stricter than the schema, never looser:
 * test/faces/acp/handshake.test.ts holds the two together.
 */
export function plainInitializeId(line: string): string | number | undefined {
  let message: unknown;
  try {
    message = JSON.parse(line);
  } catch {
    return undefined;
  }
  if (!isObject(message) || !onlyKeys(message, ["jsonrpc", "id", "method", "params"])) return undefined;
  const { jsonrpc, id, method, params } = message;
  if (jsonrpc !== "2.0" || method !== "initialize" || !(typeof id === "string" || Number.isSafeInteger(id))) return undefined;
  if (!isObject(params) || !onlyKeys(params, ["protocolVersion", "clientCapabilities", "clientInfo"])) return undefined;
  const { protocolVersion, clientCapabilities: caps = {}, clientInfo: info } = params;
  if (!Number.isInteger(protocolVersion) || (protocolVersion as number) < 0 || (protocolVersion as number) > 65535) return undefined;
  if (!isObject(caps) || !onlyKeys(caps, ["fs", "terminal"])) return undefined;
  const fs = caps.fs ?? {};
  if (!isObject(fs) || !onlyKeys(fs, ["readTextFile", "writeTextFile"])) return undefined;
  if (!optional(fs.readTextFile, "boolean") || !optional(fs.writeTextFile, "boolean") || !optional(caps.terminal, "boolean"))
    return undefined;
  if (info !== undefined) {
    if (!isObject(info) || !onlyKeys(info, ["name", "version", "title"])) return undefined;
    if (typeof info.name !== "string" || typeof info.version !== "string" || !optional(info.title, "string")) return undefined;
  }
  return id as string | number;
}

/**
 * Reads what is on `input` now: when it starts with a plain initialize request on a line of
 * its own, answers it on `output`. Returns the streams the SDK is to use: it still reads the
 * whole stream, initialize included (its connection counts as initialized only once it has
 * answered one), and its own answer to that request is left out of what it writes.
 * `reading` is called once `input` is being read.
 */
export function answerInitializeEarly(
  input: NodeJS.ReadableStream,
  output: NodeJS.WritableStream,
  serverVersion: string,
  reading: () => void,
): Promise<{ input: Readable; output: NodeJS.WritableStream }> {
  return new Promise((resolve) => {
    const rest = new PassThrough();
    const onEnd = (): void => {
      input.off("data", onData);
      rest.end();
      resolve({ input: rest, output });
    };
    const onData = (chunk: Buffer | string): void => {
      input.pause();
      input.off("end", onEnd);
      const bytes = typeof chunk === "string" ? Buffer.from(chunk) : chunk;
      const newline = bytes.indexOf(0x0a);
      const id = newline < 0 ? undefined : plainInitializeId(bytes.subarray(0, newline).toString("utf8"));
      if (id === undefined) {
        rest.write(bytes);
        input.pipe(rest);
        return resolve({ input: rest, output });
      }
      output.write(`${JSON.stringify({ jsonrpc: "2.0", id, result: initializeResult(serverVersion) })}\n`);
      // The SDK gets what follows once it has answered initialize: it refuses any other request
      // before then, and the client, answered already, may have sent one.
      rest.write(bytes.subarray(0, newline + 1));
      const afterAnswer = (): void => {
        rest.write(bytes.subarray(newline + 1));
        input.pipe(rest);
      };
      resolve({ input: rest, output: withoutAnswerTo(id, output, afterAnswer) });
    };
    input.once("data", onData);
    input.once("end", onEnd);
    reading();
  });
}

/** `output`, less the first response to request `id` written to it; `answered` is called once it was. */
function withoutAnswerTo(id: string | number, output: NodeJS.WritableStream, answered: () => void): NodeJS.WritableStream {
  let pending = "";
  let dropped = false;
  const filter = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      if (dropped) return done(null, chunk);
      pending += chunk.toString("utf8");
      let passed = "";
      for (let newline = pending.indexOf("\n"); newline >= 0 && !dropped; newline = pending.indexOf("\n")) {
        const line = pending.slice(0, newline + 1);
        pending = pending.slice(newline + 1);
        if (isAnswerTo(id, line)) dropped = true;
        else passed += line;
      }
      if (dropped) {
        passed += pending;
        pending = "";
        queueMicrotask(answered);
      }
      done(null, passed);
    },
  });
  filter.pipe(output, { end: false });
  return filter;
}

function isAnswerTo(id: string | number, line: string): boolean {
  try {
    const message: unknown = JSON.parse(line);
    return isObject(message) && message.id === id && message.method === undefined;
  } catch {
    return false;
  }
}
