// The floor under the first-turn figure: the same requests made by the SDK alone in a fresh
// process (first-turn-floor-child.ts), timed from the request to its first delta and its end.
import { fork } from "node:child_process";
import { fileURLToPath } from "node:url";
import type { FakeModelServer } from "../test/support/fake-model-server.js";

const CHILD = fileURLToPath(new URL("./first-turn-floor-child.js", import.meta.url));

/** From a request (a turn/start) to the first delta and to the end, in ms. */
export interface TurnTimes {
  delta: number;
  end: number;
}

/** One fresh process's requests, in order (the first is the process's first). */
export async function firstTurnFloor(
  fake: FakeModelServer,
  family: "responses" | "chat" | "anthropic",
  requests: number,
): Promise<TurnTimes[]> {
  const baseURL = family === "anthropic" ? fake.anthropicBaseURL : fake.openaiBaseURL;
  const child = fork(CHILD, [family, baseURL], { stdio: ["ignore", "inherit", "inherit", "ipc"] });
  const next = (): Promise<unknown> => new Promise((resolve) => child.once("message", resolve));
  try {
    await next(); // ready
    const times: TurnTimes[] = [];
    for (let i = 0; i < requests; i++) {
      fake.enqueue({ kind: "response", text: ["Hello ", "there."] });
      child.send(i);
      times.push((await next()) as TurnTimes);
    }
    return times;
  } finally {
    child.kill();
  }
}
