// The built CLI's files: what a start and a serving process load (each file costs the ESM
// loader ~0.25 ms), and that commands which never serve do not load the runtime.
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { describe, it } from "node:test";
import { CLI_PATH } from "../support/server-process.js";

const DIST = dirname(CLI_PATH);
const CHUNKS = join(DIST, "chunks");

/** The files a module loads with its static imports, itself included. */
function staticClosure(file: string, seen = new Set<string>()): Set<string> {
  if (seen.has(file)) return seen;
  seen.add(file);
  const code = readFileSync(file, "utf8");
  for (const match of code.matchAll(/(?:\bfrom|\bimport)\s*["'](\.\.?\/[^"']+\.js)["']/g)) {
    staticClosure(join(dirname(file), match[1]!), seen);
  }
  return seen;
}

/** The chunk esbuild made for a dynamically imported module of this name. */
function chunk(name: string): string {
  const found = readdirSync(CHUNKS).filter((file) => new RegExp(`^${name}-[A-Z0-9]+\\.js$`).test(file));
  assert.equal(found.length, 1, `one chunk named ${name}: ${found.join(", ")}`);
  return join(CHUNKS, found[0]!);
}

describe("the bundle", () => {
  const start = staticClosure(CLI_PATH);
  const runtime = staticClosure(chunk("server-runtime"));

  it("loads the code of every start before the first answer in at most three files", () => {
    assert.ok(start.size <= 3, [...start].join("\n"));
  });

  it("loads the runtime's code in a few files", () => {
    const runtimeOnly = [...runtime].filter((file) => !start.has(file));
    // The runtime's own chunk and those it shares with commands that never serve (9; 32 before
    // the runtime's code was made one chunk).
    assert.ok(runtimeOnly.length <= 10, runtimeOnly.join("\n"));
  });

  it("keeps the runtime (and with it SQLite) out of commands that never serve", () => {
    const loadsSqlite = (file: string): boolean => readFileSync(file, "utf8").includes('"better-sqlite3"');
    assert.ok([...runtime].some(loadsSqlite));
    for (const name of ["program", "proxy", "mcp", "chat", "db", "providers"]) {
      assert.ok(![...staticClosure(chunk(name))].some(loadsSqlite), `${name} loads the runtime`);
    }
  });
});
