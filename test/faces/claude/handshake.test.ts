// The claude dialect's early initialize answer (given before the runtime loads) against the
// protocol table: it may only be given for params the table's schema accepts, and its lists are
// the table's.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  initializeResult,
  isPlainInitialize,
  NOTIFICATION_METHODS,
  PERMISSION_MODES,
  REQUEST_METHODS,
} from "../../../src/faces/claude/handshake.js";
import { ClaudeNotifications, ClaudeRequests, PermissionMode } from "../../../src/faces/claude/protocol.js";
import { silentLogger } from "../../../src/log.js";

const schema = ClaudeRequests.initialize.params;

/** Initialize params clients send, and the near misses of each field the check looks at. */
const CORPUS: unknown[] = [
  undefined,
  {},
  { client: { name: "demo", version: "1.0" }, cwd: "/tmp/my-project" },
  { client: { name: "demo", extra: { nested: true } }, permission_mode: "acceptEdits" },
  { permission_mode: "bypassPermissions", unknownTopLevel: 1 },
  null,
  [],
  "initialize",
  { client: null },
  { client: "demo" },
  { client: {} },
  { client: { name: 1 } },
  { client: { name: "x", version: 2 } },
  { client: { name: "x", version: null } },
  { cwd: "" },
  { cwd: 3 },
  { permission_mode: "plan" },
  { permission_mode: null },
];

describe("claude early initialize", () => {
  it("is given only for params the protocol table accepts, and for what clients send", () => {
    for (const params of CORPUS) {
      // The dispatcher reads absent params as {}.
      assert.equal(isPlainInitialize(params), schema.safeParse(params === undefined ? {} : params).success, JSON.stringify(params));
    }
  });

  it("lists the table's methods, notifications and permission modes", () => {
    assert.deepEqual(REQUEST_METHODS, Object.keys(ClaudeRequests));
    assert.deepEqual(NOTIFICATION_METHODS, Object.keys(ClaudeNotifications));
    assert.deepEqual([...PERMISSION_MODES], PermissionMode.options);
  });

  it("is the table's result, models narrowed to the default's provider", async () => {
    const answer = await initializeResult({
      serverVersion: "9.9.9",
      models: async () => [
        { id: "claude-sonnet-4-6", provider: "anthropic", reasoning: true, isDefault: true },
        { id: "gpt-5", provider: "openai", reasoning: true, isDefault: false },
      ],
      toolNames: ["read_file", "bash"],
      log: silentLogger,
    });
    assert.ok(ClaudeRequests.initialize.result.safeParse(answer).success);
    assert.deepEqual(answer.capabilities.models, ["claude-sonnet-4-6"]);
    assert.deepEqual(answer.capabilities.skills, ["read_file", "bash"]);
  });

  it("answers without models when the catalog fails", async () => {
    const answer = await initializeResult({
      serverVersion: "9.9.9",
      models: () => Promise.reject(new Error("models endpoint down")),
      toolNames: [],
      log: silentLogger,
    });
    assert.deepEqual(answer.capabilities.models, []);
  });
});
