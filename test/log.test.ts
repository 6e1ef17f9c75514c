import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { describe, it } from "node:test";

const LOG_MODULE = new URL("../src/log.js", import.meta.url).href;

/** The JSON lines a child process that runs `body` (with `log`, an info-level logger) writes to stderr. */
function linesOf(body: string): Array<{ level: number; msg: string }> {
  const script = `const { createLogger } = await import(${JSON.stringify(LOG_MODULE)}); const log = createLogger("info"); ${body}`;
  const child = spawnSync(process.execPath, ["--input-type=module", "-e", script], { encoding: "utf8" });
  assert.equal(child.status, 0, child.stderr);
  return child.stderr
    .split("\n")
    .filter((line) => line.startsWith("{"))
    .map((line) => JSON.parse(line) as { level: number; msg: string });
}

describe("logger", () => {
  it("writes info lines that came before pino loaded once the current task is over, before any later line", () => {
    const lines = linesOf(`log.info("first"); log.debug("dropped"); log.info({ n: 2 }, "second"); setImmediate(() => log.info("third"));`);
    assert.deepEqual(
      lines.map((l) => l.msg),
      ["first", "second", "third"],
    );
  });

  it("keeps the order when a warning loads pino while info lines wait", () => {
    const lines = linesOf(`log.info("waiting"); log.child({ part: "x" }).warn("at once"); log.error("after");`);
    assert.deepEqual(
      lines.map((l) => [l.msg, l.level]),
      [
        ["waiting", 30],
        ["at once", 40],
        ["after", 50],
      ],
    );
  });

  it("writes waiting lines when the process exits before the next task", () => {
    const lines = linesOf(`log.info("just before exit"); log.child({ part: "y" }).info("child line"); process.exit(0);`);
    assert.deepEqual(
      lines.map((l) => l.msg),
      ["just before exit", "child line"],
    );
  });
});
