// TurnRecorder.appendText: the item's text is always the whole text so far, however many pieces.
import { test } from "node:test";
import assert from "node:assert/strict";
import { TurnRecorder } from "../../src/domain/turn-recorder.js";
import type { NewEvent } from "../../src/domain/events.js";

test("appendText keeps the text whole across batches and streams every piece", () => {
  const events: NewEvent[] = [];
  const recorder = new TurnRecorder((e) => events.push(e), "thr_1", "turn_1");
  const item = recorder.start("agentMessage", { text: "" });
  const pieces = Array.from({ length: 1_000 }, (_, i) => `p${i} `);
  pieces.forEach((piece, i) => {
    recorder.appendText(item, "agentMessage", piece);
    assert.equal(item.payload.text.length, pieces.slice(0, i + 1).join("").length);
  });
  assert.equal(item.payload.text, pieces.join(""));
  // Someone else setting the text is respected: appending goes on from what is there.
  item.payload.text = "reset ";
  recorder.appendText(item, "agentMessage", "more");
  assert.equal(item.payload.text, "reset more");
  const deltas = events.filter((e) => e.type === "item.delta");
  assert.equal(deltas.length, 1_001);
  const done = recorder.complete(item);
  assert.equal(done.payload.text, "reset more");
});
