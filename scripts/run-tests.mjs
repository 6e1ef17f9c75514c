// Runs the compiled test files with node's test runner (Node 20 takes no globs).
// Usage: node scripts/run-tests.mjs [name-filter...]
import { readdirSync } from "node:fs";
import { spawnSync } from "node:child_process";
import path from "node:path";

const dir = "dist/test";
const filters = process.argv.slice(2);
const files = readdirSync(dir)
  .filter((f) => f.endsWith(".test.js"))
  .filter((f) => filters.length === 0 || filters.some((x) => f.includes(x)))
  .map((f) => path.join(dir, f))
  .sort();
if (files.length === 0) {
  console.error("no test files matched");
  process.exit(1);
}
const result = spawnSync(process.execPath, ["--test", "--test-concurrency=2", ...files], { stdio: "inherit" });
process.exit(result.status ?? 1);
