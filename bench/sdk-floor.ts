// The floor under the streaming figure: what the OpenAI SDK alone costs to read the same
// stream (its SSE parser, over the fetch the server hands it), measured as the server is: wall
// time minus the fake model's busy time, per delta, in a fresh process, after one warm-up turn.
import { fork } from "node:child_process";
import { fileURLToPath } from "node:url";
import type { FakeModelServer } from "../test/support/fake-model-server.js";

const CHILD = fileURLToPath(new URL("./sdk-floor-child.js", import.meta.url));

/** Per turn (the warm-up first), microseconds per delta of (wall − fake busy). */
export async function sdkFloor(fake: FakeModelServer, turns: number, deltas: number): Promise<number[]> {
  const child = fork(CHILD, [fake.openaiBaseURL], { stdio: ["ignore", "inherit", "inherit", "ipc"] });
  const next = (): Promise<unknown> => new Promise((resolve) => child.once("message", resolve));
  try {
    await next(); // ready
    const perDelta: number[] = [];
    for (let turn = 0; turn < turns; turn++) {
      fake.enqueue({ kind: "response", text: Array.from({ length: deltas }, (_, i) => `f${turn}d${i} `) });
      const busy0 = fake.stats.busyMs;
      child.send(turn);
      const result = (await next()) as { deltas: number; wallMs: number };
      if (result.deltas !== deltas) throw new Error(`the SDK floor read ${result.deltas} of ${deltas} deltas`);
      perDelta.push(((result.wallMs - (fake.stats.busyMs - busy0)) * 1000) / deltas);
    }
    return perDelta;
  } finally {
    child.kill();
  }
}
