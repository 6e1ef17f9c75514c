// The first turn's floor (run by first-turn-floor.ts in a process of its own): a fresh process
// that has already loaded one provider family's SDK and made its client, then streams one short
// response per request from the parent, over the same fetch the server hands the SDKs. What its
// first request takes over a later one is what the SDK and Node cost on first use (Node's fetch
// classes, the SDK's request and stream code compiled on their first call), with no server around.
import { httpFetch } from "../src/providers/http-fetch.js";

type Family = "responses" | "chat" | "anthropic";
const [family, baseURL] = process.argv.slice(2) as [Family, string];

/** Streams one response; calls `onDelta` at its first text delta. */
async function streamOnce(onDelta: () => void): Promise<void> {
  const input = [{ role: "user" as const, content: "hi" }];
  if (family === "anthropic") {
    const stream = await anthropic!.messages.create({ model: "floor", max_tokens: 64, messages: input, stream: true });
    for await (const event of stream) if (event.type === "content_block_delta") onDelta();
  } else if (family === "chat") {
    const stream = await openai!.chat.completions.create({ model: "floor", messages: input, stream: true });
    for await (const chunk of stream) if (chunk.choices[0]?.delta?.content) onDelta();
  } else {
    const stream = await openai!.responses.create({ model: "floor", input, stream: true });
    for await (const event of stream) if (event.type === "response.output_text.delta") onDelta();
  }
}

const options = { apiKey: "floor", maxRetries: 0, fetch: httpFetch };
const anthropic = family === "anthropic" ? new (await import("@anthropic-ai/sdk")).default({ ...options, baseURL }) : undefined;
const openai = family === "anthropic" ? undefined : new (await import("openai")).default({ ...options, baseURL });

process.on("message", () => {
  void (async () => {
    const t0 = performance.now();
    let delta = 0;
    await streamOnce(() => (delta ||= performance.now() - t0));
    process.send!({ delta, end: performance.now() - t0 });
  })();
});
process.send!("ready");
