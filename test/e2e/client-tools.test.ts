// Tools a client provides (configuration.dynamicTools) over a real server: offered to the model
// with the client's schema, each call sent to the client as item/tool/call, its answer the result,
// recorded as one dynamicToolCall item.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { startHarness, text, type Harness } from "../support/harness.js";

type Item = { type: string; payload: Record<string, unknown> };
type Body = { messages: Array<{ role: string; content: unknown }>; tools?: Array<{ function: { name: string; parameters: unknown } }> };

describe("tools a client provides", () => {
  let h: Harness;
  const calls: Array<Record<string, unknown>> = [];
  before(async () => {
    h = await startHarness();
    h.client.handle("item/tool/call", (params) => {
      const call = params as { arguments: { title: string } };
      calls.push(params as Record<string, unknown>);
      return call.arguments.title === "bug"
        ? { success: true, contentItems: [{ type: "inputText", text: "TICKET-42" }] }
        : { success: false, output: "titles must be short" };
    });
  });
  after(() => h.close());

  it("the model calls the client's tool; the client's answer is the result, in one dynamicToolCall item", async () => {
    const dynamicTools = [
      { name: "open_ticket", description: "Opens a ticket.", inputSchema: { type: "object", properties: { title: { type: "string" } } } },
    ];
    const threadId = await h.startThread({ configuration: { dynamicTools } });
    h.fake.enqueue(
      { kind: "response", toolCalls: [{ name: "open_ticket", arguments: { title: "bug" } }] },
      { kind: "response", toolCalls: [{ name: "open_ticket", arguments: { title: "a very long title" } }] },
      { kind: "response", text: "Opened." },
    );
    const from = h.fake.requests.length;
    const turn = (await h.client.call("turn/start", { threadId, input: text("open a ticket") })).turn as { id: string };
    assert.equal((await h.client.turnEnd(threadId, turn.id)).method, "turn/completed");

    const [first, second, third] = h.fake.requests.slice(from).map((r) => r.body as Body);
    const spec = first!.tools!.find((t) => t.function.name === "open_ticket");
    assert.deepEqual(spec?.function.parameters, dynamicTools[0]!.inputSchema);
    assert.equal(second!.messages.findLast((m) => m.role === "tool")?.content, "TICKET-42");
    assert.equal(third!.messages.findLast((m) => m.role === "tool")?.content, "titles must be short");

    assert.deepEqual(
      { threadId: calls[0]!.threadId, turnId: calls[0]!.turnId, tool: calls[0]!.tool, arguments: calls[0]!.arguments },
      { threadId, turnId: turn.id, tool: "open_ticket", arguments: { title: "bug" } },
    );
    const items = h.client
      .notifications("item/completed")
      .filter((p) => p.threadId === threadId)
      .map((p) => p.item as Item);
    const dynamic = items.filter((i) => i.type === "dynamicToolCall");
    assert.deepEqual(
      dynamic.map((i) => [i.payload.output, i.payload.success]),
      [
        ["TICKET-42", true],
        ["titles must be short", false],
      ],
    );
    assert.ok(!items.some((i) => i.type === "toolCall" || i.type === "toolResult"));
  });

  it("refuses a tool name the model APIs would not take", async () => {
    const response = await h.client.request("thread/start", { configuration: { dynamicTools: [{ name: "has space" }] } });
    assert.equal(response.error?.code, -32602);
  });
});
