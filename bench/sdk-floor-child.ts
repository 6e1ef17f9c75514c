// The streaming floor's consumer (run by sdk-floor.ts in a process of its own): reads each
// chat-completion stream the parent scripts with the OpenAI SDK, over the same fetch the server
// hands it, and does nothing with the deltas. Tells the parent each turn's wall time.
import OpenAI from "openai";
import { httpFetch } from "../src/providers/http-fetch.js";

const client = new OpenAI({ baseURL: process.argv[2], apiKey: "floor", maxRetries: 0, fetch: httpFetch });
const send = (message: unknown): void => void process.send!(message);

process.on("message", (turn: number) => {
  void (async () => {
    const t0 = performance.now();
    const stream = await client.chat.completions.create({
      model: "floor",
      messages: [{ role: "user", content: "stream" }],
      stream: true,
      stream_options: { include_usage: true },
    });
    let deltas = 0;
    for await (const chunk of stream) if (chunk.choices[0]?.delta?.content) deltas++;
    send({ turn, deltas, wallMs: performance.now() - t0 });
  })();
});
send("ready");
