// The router of a connection opened while the server starts: an early answer still being made
// (the claude dialect's waits for the model catalog) goes out before the face's code starts
// loading, whose compilation would stop the event loop, and the face still sees that initialize
// before any later request. A face with no initialize (AgentCompany) serves the requests that
// need no runtime before it is up, in order with those that wait for it.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { FaceRouter } from "../../src/faces/face-router.js";
import type { EarlyFacts, Face } from "../../src/faces/face.js";
import { createLogger } from "../../src/log.js";
import { RpcConnection } from "../../src/rpc/connection.js";
import { RpcError } from "../../src/rpc/errors.js";
import type { RuntimeApi } from "../../src/runtime/api.js";
import { createChannelPair } from "../support/channel-pair.js";

/** A client connected to a router over an in-memory channel. */
function connect(face: Face, runtime: Promise<RuntimeApi>, answering: Array<Promise<unknown>>, forced?: Face): RpcConnection {
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
    runtime,
    early,
    answeringEarly: (making) => answering.push(making),
    notInitialized: () => new RpcError(-32002, "not initialized"),
    forced,
  });
  return new RpcConnection(clientEnd, { onRequest: () => undefined });
}

const loopTurns = async (n: number): Promise<void> => {
  for (let i = 0; i < n; i++) await new Promise((resolve) => setImmediate(resolve));
};

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
    const client = connect(face, runtime.promise, answering);

    const initialized = client.request("initialize", {});
    const later = client.request("later", {});
    // Wait until the router has the request; the answer is still being made.
    while (answering.length === 0) await loopTurns(1);
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

describe("FaceRouter: a face with no initialize that serves requests before the runtime is up", () => {
  it("answers them at once, and a request that waits for the runtime comes after them, as do all later ones", async () => {
    const events: string[] = [];
    const served = deferred<string>();
    const runtime = deferred<RuntimeApi>();
    const answering: Array<Promise<unknown>> = [];
    const face: Face = {
      name: "files",
      serveEarly: (method) => {
        if (!method.startsWith("files.")) return undefined;
        events.push(`served ${method}`);
        return served.promise;
      },
      preload: () => events.push("preload"),
      open: () => ({
        onRequest: (method) => {
          events.push(`handled ${method}`);
          return "ok";
        },
      }),
    };
    const client = connect(face, runtime.promise, answering, face);

    const first = client.request("files.init", {});
    const second = client.request("runs.create", {});
    const third = client.request("files.open", {});
    while (answering.length === 0) await loopTurns(1);
    assert.deepEqual(events, ["served files.init"], "the face's code loads with the runtime, after what is served early");

    // The runtime is up before the early answer is made: the request that waited for it still
    // comes after that answer, and so does the one behind it, though the face could serve it early.
    runtime.resolve({} as RuntimeApi);
    await loopTurns(5);
    assert.deepEqual(events, ["served files.init", "preload"]);

    served.resolve("early");
    assert.equal(await first, "early");
    assert.equal(await second, "ok");
    assert.equal(await third, "ok");
    assert.deepEqual(events, ["served files.init", "preload", "handled runs.create", "handled files.open"]);
    assert.equal(answering.length, 1);
  });
});
