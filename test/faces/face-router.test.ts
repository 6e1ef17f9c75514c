// The router of a connection opened while the server starts: an early answer still being made
// (the claude dialect's waits for the model catalog) goes out before the face's code starts
// loading, whose compilation would stop the event loop, and the face still sees that initialize
// before any later request.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { FaceRouter } from "../../src/faces/face-router.js";
import type { EarlyFacts, Face } from "../../src/faces/face.js";
import { createLogger } from "../../src/log.js";
import { RpcConnection } from "../../src/rpc/connection.js";
import { RpcError } from "../../src/rpc/errors.js";
import type { RuntimeApi } from "../../src/runtime/api.js";
import { createChannelPair } from "../support/channel-pair.js";

function deferred<T>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

describe("FaceRouter: an early answer that is still being made", () => {
  it("is sent before the face's code loads, and the face sees the initialize before later requests", async () => {
    const events: string[] = [];
    const answer = deferred<{ server: string }>();
    const runtime = deferred<RuntimeApi>();
    const answering: Array<Promise<unknown>> = [];
    const face: Face = {
      name: "slow-early",
      claims: () => true,
      answerEarly: () => {
        events.push("answering");
        return answer.promise;
      },
      preload: () => events.push("preload"),
      open: () => ({
        onRequest: (method) => {
          events.push(`handled ${method}`);
          return method === "initialize" ? { server: "late" } : "ok";
        },
      }),
    };
    const log = createLogger("silent");
    const [serverEnd, clientEnd] = createChannelPair();
    const early: EarlyFacts = { serverVersion: "0", models: async () => [], toolNames: [], log };
    // The router needs the connection, and the connection the router's handlers.
    let router: FaceRouter | undefined;
    const connection = new RpcConnection(serverEnd, {
      onRequest: (method, params, ctx) => router?.onRequest(method, params, ctx),
    });
    router = new FaceRouter({
      faces: [face],
      fallback: face,
      connection,
      log,
      serverVersion: "0",
      runtime: runtime.promise,
      early,
      answeringEarly: (making) => answering.push(making),
      notInitialized: () => new RpcError(-32002, "not initialized"),
    });
    const client = new RpcConnection(clientEnd, { onRequest: () => undefined });

    const initialized = client.request("initialize", {});
    const later = client.request("later", {});
    // Wait until the router has the request; the answer is still being made.
    while (answering.length === 0) await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(events, ["answering"], "the face's code must not start loading before the answer is out");

    answer.resolve({ server: "early" });
    assert.deepEqual(await initialized, { server: "early" });
    await answering[0];
    assert.deepEqual(events, ["answering", "preload"]);

    runtime.resolve({} as RuntimeApi);
    assert.equal(await later, "ok");
    assert.deepEqual(events, ["answering", "preload", "handled initialize", "handled later"]);
  });
});
