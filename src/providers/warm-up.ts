// A fresh process's first model request runs code nothing has run yet: Node's fetch classes
// (its bundled undici, loaded on the first Headers), the SDK's request building, its SSE parser
// and stream iterator, the provider's mapping. Compiling that on first call takes 23-32 ms
// (`npm run bench -- "First turn"`: the SDK alone, its first request over a later one). A
// provider's prepare() runs its whole streaming path once against an answer made here, in
// memory, so that a first turn coming after the preparation pays none of it. No request leaves
// the process, and the answer goes nowhere.
import { Readable } from "node:stream";
import type { ModelRequest } from "./provider.js";
import { eventStreamResponse } from "./sse-body.js";

const WARM_UP_REQUEST: ModelRequest = {
  model: "warm-up",
  system: "warm-up",
  messages: [{ role: "user", content: "warm-up" }],
  tools: [],
};

/** A fetch that answers any request with `events` as an event stream, cut as httpFetch cuts one. */
function replayFetch(events: string): typeof fetch {
  return () =>
    Promise.resolve(
      eventStreamResponse(Readable.from([Buffer.from(events)]), { status: 200, headers: { "content-type": "text/event-stream" } }),
    );
}

const sse = (events: Array<[string | undefined, unknown]>): string =>
  events.map(([name, data]) => `${name ? `event: ${name}\n` : ""}data: ${JSON.stringify(data)}\n\n`).join("");

const chatChunk = (delta: object, finishReason: string | null): object => ({
  id: "warm-up",
  object: "chat.completion.chunk",
  created: 0,
  model: "warm-up",
  choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }],
});

/** A Chat Completions stream: one text delta, a finish reason, usage, [DONE]. */
export const CHAT_ANSWER =
  sse([
    [undefined, chatChunk({ role: "assistant", content: "ok" }, null)],
    [undefined, chatChunk({}, "stop")],
    [
      undefined,
      {
        id: "warm-up",
        object: "chat.completion.chunk",
        created: 0,
        model: "warm-up",
        choices: [],
        usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
      },
    ],
  ]) + "data: [DONE]\n\n";

const message = {
  id: "msg_warm_up",
  type: "message",
  role: "assistant",
  status: "completed",
  content: [{ type: "output_text", text: "ok", annotations: [] }],
};
const response = (status: string, output: object[]): object => ({
  id: "resp_warm_up",
  object: "response",
  created_at: 0,
  status,
  model: "warm-up",
  output,
  usage: status === "completed" ? { input_tokens: 1, output_tokens: 1, total_tokens: 2 } : null,
});

/** A Responses stream: created, one message item with one text delta, completed. */
export const RESPONSES_ANSWER = sse(
  (
    [
      ["response.created", { response: response("in_progress", []) }],
      ["response.output_item.added", { output_index: 0, item: { ...message, status: "in_progress", content: [] } }],
      ["response.output_text.delta", { item_id: message.id, output_index: 0, content_index: 0, delta: "ok" }],
      ["response.output_item.done", { output_index: 0, item: message }],
      ["response.completed", { response: response("completed", [message]) }],
    ] as const
  ).map(([type, data], sequence_number) => [type, { type, sequence_number, ...data }]),
);

/** An Anthropic Messages stream: one text block with one delta, the stop reason, message_stop. */
export const ANTHROPIC_ANSWER = sse(
  (
    [
      [
        "message_start",
        {
          message: {
            id: "msg_warm_up",
            type: "message",
            role: "assistant",
            model: "warm-up",
            content: [],
            stop_reason: null,
            stop_sequence: null,
            usage: { input_tokens: 1, output_tokens: 1 },
          },
        },
      ],
      ["content_block_start", { index: 0, content_block: { type: "text", text: "" } }],
      ["content_block_delta", { index: 0, delta: { type: "text_delta", text: "ok" } }],
      ["content_block_stop", { index: 0 }],
      ["message_delta", { delta: { stop_reason: "end_turn", stop_sequence: null }, usage: { output_tokens: 1 } }],
      ["message_stop", {}],
    ] as const
  ).map(([type, data]) => [type, { type, ...data }]),
);

/**
 * Runs a provider's streaming path (`streamWith`, given how to load its SDK) once, to its end,
 * with the loaded SDK's client answering `events`; the events go nowhere.
 */
export async function warmUp<Client extends { withOptions(options: { fetch: typeof fetch }): Client }, Sdk extends { client: Client }>(
  sdk: Sdk,
  events: string,
  streamWith: (load: () => Promise<Sdk>, request: ModelRequest, signal: AbortSignal) => AsyncIterable<unknown>,
): Promise<void> {
  const load = (): Promise<Sdk> => Promise.resolve({ ...sdk, client: sdk.client.withOptions({ fetch: replayFetch(events) }) });
  for await (const _event of streamWith(load, WARM_UP_REQUEST, new AbortController().signal));
}
