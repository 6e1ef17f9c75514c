import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { BatchedLookup } from "../../src/store/batched-lookup.js";

describe("BatchedLookup", () => {
  it("answers the keys asked for together from one fetch, each asker with its own value", async () => {
    const fetches: string[][] = [];
    const lookup = new BatchedLookup<string, number>(async (keys) => {
      fetches.push(keys);
      return new Map(keys.filter((k) => k !== "missing").map((k) => [k, k.length]));
    });
    const answers = await Promise.all([lookup.get("a"), lookup.get("bbb"), lookup.get("a"), lookup.get("missing")]);
    assert.deepEqual(answers, [1, 3, 1, undefined]);
    assert.deepEqual(fetches, [["a", "bbb", "missing"]]);
    assert.equal(await lookup.get("cc"), 2);
    assert.equal(fetches.length, 2, "a later ask is a new fetch");
  });

  it("rejects every asker of a fetch that failed, and the next fetch is made afresh", async () => {
    let fail = true;
    const lookup = new BatchedLookup<string, string>(async (keys) => {
      if (fail) throw new Error("down");
      return new Map(keys.map((k) => [k, k]));
    });
    const results = await Promise.allSettled([lookup.get("x"), lookup.get("y")]);
    assert.deepEqual(
      results.map((r) => r.status),
      ["rejected", "rejected"],
    );
    fail = false;
    assert.equal(await lookup.get("x"), "x");
  });
});
