// Attachments as browsers send them ({name, mime, base64}) turned into turn input.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { inputOf } from "../../../src/faces/yeaft/wire.js";

const b64 = (text: string | Buffer): string => Buffer.from(text).toString("base64");

describe("Yeaft attachments", () => {
  it("sends images as image parts and text files inline, after the text", () => {
    const png = b64(Buffer.from([0x89, 0x50, 0x4e, 0x47]));
    assert.deepEqual(
      inputOf("look", [
        { name: "shot.png", mime: "image/png", base64: png },
        { name: "a.json", mime: "application/json", base64: b64('{"a":1}') },
      ]),
      [
        { type: "text", text: "look" },
        { type: "image", url: `data:image/png;base64,${png}` },
        { type: "text", text: 'Attached file a.json:\n```\n{"a":1}\n```' },
      ],
    );
  });

  it("refuses binary files, oversized ones, malformed ones and empty messages, with a reason", () => {
    const problem = (result: ReturnType<typeof inputOf>): string => ("problem" in result ? result.problem : "accepted");
    assert.match(
      problem(inputOf("x", [{ name: "a.bin", mime: "application/octet-stream", base64: b64(Buffer.from([0, 1, 255])) }])),
      /binary/,
    );
    assert.match(
      problem(inputOf("x", [{ name: "big.png", mime: "image/png", base64: b64(Buffer.alloc(9 * 1024 * 1024)) }])),
      /larger than 8 MB/,
    );
    assert.match(problem(inputOf("x", [{ mime: "text/plain" }])), /needs a name and base64/);
    assert.match(problem(inputOf("", [])), /empty/);
  });
});
