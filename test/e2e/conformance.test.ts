// Every message the server sends in a rich session matches the protocol table the schemas,
// the typed client and the docs are generated from.
import assert from "node:assert/strict";
import { it } from "node:test";
import { AppServerNotifications, AppServerRequests, AppServerServerRequests } from "../../src/faces/appserver/protocol.js";
import { startHarness, text } from "../support/harness.js";

it("responses, notifications and server requests conform to the declared schemas", async () => {
  const h = await startHarness();
  try {
    h.client.handle("item/approval/request", () => ({ decision: "accept" }));
    h.fake.enqueue(
      {
        kind: "response",
        reasoning: ["Let me ", "look."],
        text: "Working on it.",
        toolCalls: [
          { id: "c_plan", name: "update_plan", arguments: { plan: [{ step: "Write", status: "in_progress" }] } },
          { id: "c_write", name: "write_file", arguments: { path: "a.txt", content: "a\n" } },
          { id: "c_bash", name: "bash", arguments: { command: "cat a.txt" } },
          { id: "c_bad", name: "read_file", arguments: { path: "../outside" } },
        ],
        usage: { input: 10, output: 5 },
      },
      { kind: "response", text: ["Done", "."], usage: { input: 20, output: 2 } },
      { kind: "response", text: "queued", holdOpen: true },
    );
    const threadId = await h.startThread({ displayName: "Conformance" });
    await h.client.call("thread/rename", { threadId, displayName: "Renamed" });
    await h.client.call("thread/config/update", { threadId, configuration: { commandTimeoutMs: 60_000 } });
    await h.client.call("thread/mode/set", { threadId, mode: "agent" });
    await h.client.call("turn/start", { threadId, input: text("do it all") });
    await h.client.call("turn/enqueue", { threadId, input: text("then this") });
    await h.client.waitFor(
      (m) => m.method === "turn/started" && (m.params?.turn as { input: Array<{ text: string }> }).input[0]!.text === "then this",
    );
    await h.client.call("turn/steer", { threadId, input: text("steer") });
    await h.client.call("turn/interrupt", { threadId });
    await h.client.call("thread/list", {});
    await h.client.call("thread/read", { threadId });
    await h.client.call("thread/resume", { threadId });
    await h.client.call("thread/unsubscribe", { threadId });
    await h.client.call("thread/subscribe", { threadId, afterSeq: 0 });
    const other = await h.startThread();
    await h.client.call("thread/delete", { threadId: other });
    await h.client.notification("thread/deleted", (p) => p.threadId === other);

    const seen = new Set<string>();
    for (const message of h.client.received) {
      if (message.method && message.id !== undefined) {
        const spec = AppServerServerRequests[message.method as keyof typeof AppServerServerRequests];
        assert.ok(spec, `undeclared server request ${message.method}`);
        spec.params.parse(message.params);
        seen.add(message.method);
      } else if (message.method) {
        const schema = AppServerNotifications[message.method as keyof typeof AppServerNotifications];
        assert.ok(schema, `undeclared notification ${message.method}`);
        const parsed = schema.safeParse(message.params);
        assert.ok(parsed.success, `${message.method}: ${JSON.stringify(parsed.error?.issues)}\n${JSON.stringify(message.params)}`);
        seen.add(message.method);
      } else if (message.result) {
        const method = h.client.sentRequests.get(message.id!)!;
        const spec = AppServerRequests[method as keyof typeof AppServerRequests];
        const parsed = spec.result.safeParse(message.result);
        assert.ok(parsed.success, `${method} result: ${JSON.stringify(parsed.error?.issues)}`);
        seen.add(method);
      }
    }
    // The session exercised most of the surface.
    for (const method of [
      "item/approval/request",
      "plan/updated",
      "turn/diff/updated",
      "item/reasoning/delta",
      "item/commandExecution/outputDelta",
      "item/toolCall/argumentsDelta",
      "thread/queue/updated",
      "turn/cancelled",
      "thread/deleted",
      "thread/renamed",
      "thread/resumed",
    ]) {
      assert.ok(seen.has(method), `not exercised: ${method}`);
    }
  } finally {
    await h.close();
  }
});
