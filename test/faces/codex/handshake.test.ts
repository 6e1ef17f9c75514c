// The Codex dialect's early initialize answer (given before the runtime loads) against the
// protocol table: only for params the table's schema accepts, and the answer the table declares.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { codexInitializeResult, isPlainCodexInitialize } from "../../../src/faces/codex/handshake.js";
import { CodexRequests } from "../../../src/faces/codex/protocol.js";

const schema = CodexRequests.initialize.params;

/** What Codex's clients send, and near misses of each field the check looks at. */
const CORPUS: unknown[] = [
  { clientInfo: { name: "codex_cli_rs", title: null, version: "0.1.0" }, capabilities: null },
  { clientInfo: { name: "codex_vscode", title: "Codex", version: "1" }, capabilities: { experimentalApi: true } },
  { clientInfo: { name: "x" } },
  { clientInfo: { name: "x", extra: 1 }, unknownTopLevel: true },
  undefined,
  null,
  [],
  {},
  { clientInfo: null },
  { clientInfo: { title: "x" } },
  { clientInfo: { name: 1 } },
  { clientInfo: { name: "x", title: 2 } },
  { clientInfo: { name: "x", version: false } },
  { clientInfo: { name: "x" }, capabilities: [] },
  { clientInfo: { name: "x" }, capabilities: "all" },
];

describe("Codex early initialize", () => {
  it("is given exactly for the params the protocol table accepts", () => {
    for (const params of CORPUS) assert.equal(isPlainCodexInitialize(params), schema.safeParse(params).success, JSON.stringify(params));
  });

  it("is the table's result", () => {
    assert.ok(CodexRequests.initialize.result.safeParse(codexInitializeResult("9.9.9")).success);
    assert.match(codexInitializeResult("9.9.9").userAgent, /^switchyard_codex\/\d+\.\d+\.\d+ .* switchyard\/9\.9\.9$/);
  });
});
