// The early initialize answer (given before the runtime loads) against the protocol table: it
// may only be given for params the table's schema accepts, and it is the answer the session gives.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { CAPABILITY_FLAGS, initializeResult, isPlainInitialize } from "../../../src/faces/appserver/handshake.js";
import { AppServerRequests, ClientCapabilities } from "../../../src/faces/appserver/protocol.js";
import { FULL_CAPABILITIES } from "../../support/test-client.js";

const schema = AppServerRequests.initialize.params;
const clientInfo = { name: "editor", version: "1.2.3" };

/** Initialize params clients send, and the near misses of each field the check looks at. */
const CORPUS: unknown[] = [
  { clientInfo },
  { clientInfo: { name: "dotcraft-sdk" } },
  { clientInfo: { name: "x", title: "X", version: "0", extra: { nested: true } }, capabilities: FULL_CAPABILITIES },
  { clientInfo, capabilities: { approvalSupport: true, optOutNotificationMethods: ["item/agentMessage/delta"] } },
  { clientInfo, capabilities: { futureFlag: 3 } },
  { clientInfo, unknownTopLevel: 1 },
  undefined,
  null,
  [],
  "initialize",
  {},
  { clientInfo: null },
  { clientInfo: "editor" },
  { clientInfo: { version: "1" } },
  { clientInfo: { name: 1 } },
  { clientInfo: { name: "x", title: 2 } },
  { clientInfo: { name: "x", version: null } },
  { clientInfo, capabilities: null },
  { clientInfo, capabilities: [] },
  { clientInfo, capabilities: { approvalSupport: "yes" } },
  { clientInfo, capabilities: { streamingSupport: 1 } },
  { clientInfo, capabilities: { configChange: null } },
  { clientInfo, capabilities: { optOutNotificationMethods: "item/agentMessage/delta" } },
  { clientInfo, capabilities: { optOutNotificationMethods: [1] } },
];

describe("AppServer early initialize", () => {
  it("is given only for params the protocol table accepts", () => {
    for (const params of CORPUS) {
      if (isPlainInitialize(params))
        assert.ok(schema.safeParse(params).success, `answered early but the table refuses ${JSON.stringify(params)}`);
    }
  });

  it("is given for what clients send, and agrees with the table on every field it checks", () => {
    for (const params of CORPUS) {
      assert.equal(isPlainInitialize(params), schema.safeParse(params).success, JSON.stringify(params));
    }
  });

  it("checks every capability the table declares (a new one must be added to the check)", () => {
    assert.deepEqual([...CAPABILITY_FLAGS, "optOutNotificationMethods"].sort(), Object.keys(ClientCapabilities.shape).sort());
    for (const flag of CAPABILITY_FLAGS) assert.equal(isPlainInitialize({ clientInfo, capabilities: { [flag]: "yes" } }), false, flag);
  });

  it("is the table's result", () => {
    assert.ok(AppServerRequests.initialize.result.safeParse(initializeResult("9.9.9")).success);
  });
});
