import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { Coalesced } from "../src/coalesced.js";

describe("Coalesced", () => {
  it("runs once more for any number of asks during a run, never two runs at once", async () => {
    let runs = 0;
    let inside = 0;
    let release!: () => void;
    const job = new Coalesced(async () => {
      runs++;
      inside++;
      assert.equal(inside, 1, "two runs at once");
      if (runs === 1) await new Promise<void>((resolve) => (release = resolve));
      inside--;
    });
    const first = job.run();
    assert.equal(job.busy, true);
    void job.run();
    void job.run();
    release();
    await first;
    assert.equal(runs, 2, "the asks made during the first run make one more");
    assert.equal(job.busy, false);
  });

  it("starts a run no sooner than spacingMs after the previous one started", async () => {
    // The start times the job keeps: a clock read inside the work could come late by however
    // long the process waited for a core in between (1.7 ms once, on a loaded machine).
    const starts: number[] = [];
    const job: Coalesced = new Coalesced(async () => void starts.push(job.startedAt), 30);
    await job.run();
    await job.run();
    await job.run();
    assert.equal(starts.length, 3);
    for (let i = 1; i < starts.length; i++) assert.ok(starts[i]! - starts[i - 1]! >= 30, `runs ${starts[i]! - starts[i - 1]!} ms apart`);
  });
});
