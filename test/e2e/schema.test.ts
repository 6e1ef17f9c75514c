// The exported protocol files (schema/<face>/<face>.schema.json and .d.ts, docs/reference/<face>.md)
// are generated from the faces' protocol tables and checked in: regenerating them must give the
// same bytes, the declarations must compile, and every $ref must resolve.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { before, describe, it } from "node:test";
import { faceProtocols } from "../../src/cli/schema.js";

const FACE_PROTOCOLS = await faceProtocols();
import { refsOf } from "../../src/schema/json-schema.js";
import { CLI_PATH, tempDir } from "../support/server-process.js";

const ROOT = fileURLToPath(new URL("../../../", import.meta.url));
const TSC = path.join(ROOT, "node_modules/typescript/bin/tsc");
const STALE = "is out of date with the protocol tables: run `npm run schema` and commit the result";

/** Every file under a directory, as paths relative to it, sorted. */
function listFiles(dir: string): string[] {
  if (!fs.existsSync(dir)) return [];
  return fs
    .readdirSync(dir, { recursive: true, encoding: "utf8" })
    .filter((file) => fs.statSync(path.join(dir, file)).isFile())
    .map((file) => file.split(path.sep).join("/"))
    .sort();
}

describe("exported protocol schemas", () => {
  // Same layout as the repository, so the pages' relative links come out the same.
  const generated = tempDir("schema");
  const out = path.join(generated, "schema");
  const docs = path.join(generated, "docs/reference");

  before(() => {
    const run = spawnSync(process.execPath, [CLI_PATH, "schema", "--out", out, "--docs", docs], { encoding: "utf8" });
    assert.equal(run.status, 0, `switchyard schema failed:\n${run.stderr}`);
  });

  it("schema/ holds exactly the generated files, byte for byte", () => {
    const expected = listFiles(out);
    assert.deepEqual(expected, FACE_PROTOCOLS.flatMap((p) => [`${p.name}/${p.name}.d.ts`, `${p.name}/${p.name}.schema.json`]).sort());
    assert.deepEqual(listFiles(path.join(ROOT, "schema")), expected, `schema/ ${STALE}`);
    for (const file of expected) {
      const checkedIn = fs.readFileSync(path.join(ROOT, "schema", file), "utf8");
      assert.ok(checkedIn === fs.readFileSync(path.join(out, file), "utf8"), `schema/${file} ${STALE}`);
    }
  });

  it("docs/reference/ pages are current", () => {
    for (const protocol of FACE_PROTOCOLS) {
      const file = `${protocol.name}.md`;
      const checkedIn = path.join(ROOT, "docs/reference", file);
      assert.ok(fs.existsSync(checkedIn), `docs/reference/${file} is missing: run \`npm run schema\``);
      assert.ok(fs.readFileSync(checkedIn, "utf8") === fs.readFileSync(path.join(docs, file), "utf8"), `docs/reference/${file} ${STALE}`);
    }
  });

  it("the TypeScript declarations compile with --strict", () => {
    const files = FACE_PROTOCOLS.map((p) => path.join(out, p.name, `${p.name}.d.ts`));
    // Run outside the repository, so nothing but the declarations themselves is in the program.
    const run = spawnSync(process.execPath, [TSC, "--noEmit", "--strict", ...files], { encoding: "utf8", cwd: generated });
    assert.equal(run.status, 0, `tsc --noEmit --strict failed:\n${run.stdout}${run.stderr}`);
  });

  it("every $ref of each JSON Schema names one of its $defs", () => {
    for (const protocol of FACE_PROTOCOLS) {
      const document = JSON.parse(fs.readFileSync(path.join(out, protocol.name, `${protocol.name}.schema.json`), "utf8")) as {
        $defs: Record<string, unknown>;
      };
      const dangling = [...new Set(refsOf(document))].filter((name) => !(name in document.$defs));
      assert.deepEqual(dangling, [], `${protocol.name}: $refs without a definition`);
    }
  });

  it("every method has a one-line description", () => {
    for (const protocol of FACE_PROTOCOLS) {
      const methods = [
        ...Object.entries(protocol.requests).map(([method, spec]) => [method, spec.description] as const),
        ...Object.entries(protocol.serverRequests).map(([method, spec]) => [method, spec.description] as const),
        ...Object.entries(protocol.notifications).map(([method, schema]) => [method, schema.description] as const),
      ];
      for (const [method, description] of methods) {
        assert.ok(description && !description.includes("\n"), `${protocol.name} ${method}: give it a one-line description`);
      }
    }
  });
});
