// Runs the compiled test files with node's test runner (Node 20 takes no globs).
// Usage: node scripts/run-tests.mjs [path-filter...]   e.g. `e2e/`, `faces/acp`, `store`
import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { spawnSync } from "node:child_process";
import os from "node:os";
import path from "node:path";

const dir = "dist/test";
const filters = process.argv.slice(2);
const files = readdirSync(dir, { recursive: true })
  .map(String)
  .filter((f) => f.endsWith(".test.js") && !f.startsWith("agents"))
  .filter((f) => filters.length === 0 || filters.some((x) => f.includes(x)))
  .map((f) => path.join(dir, f))
  .sort();
if (files.length === 0) {
  console.error("no test files matched");
  process.exit(1);
}
// SWITCHYARD_TEST_STORE=postgres: every spawned server keeps its threads in PostgreSQL (one
// server for the run, a database per data directory; see test/support/postgres.ts).
let postgres;
const env = { ...process.env };
if (process.env.SWITCHYARD_TEST_STORE === "postgres") {
  const { TestPostgres, postgresMissing } = await import("../dist/test/support/postgres.js");
  const missing = postgresMissing();
  if (missing) {
    console.error(`SWITCHYARD_TEST_STORE=postgres: not run, ${missing}`);
    process.exit(0);
  }
  postgres = await TestPostgres.start();
  env.SWITCHYARD_TEST_PG_PORT = String(postgres.port);
  console.error(`SWITCHYARD_TEST_STORE=postgres: every server keeps its threads in PostgreSQL on port ${postgres.port}`);
}
// The tests' temp files (data dirs, workspaces, homes: about 500 dirs and 50 MB a run) go under
// one directory of the run's, removed when the run passes and kept, named, when it fails.
// Readable by all: a test may start its own PostgreSQL there, as the postgres user.
env.TMPDIR = mkdtempSync(path.join(os.tmpdir(), "switchyard-test-run-"));
chmodSync(env.TMPDIR, 0o755);
// A file still running after five minutes has hung (the slowest takes under a minute): node's
// runner fails it, stops it and goes on, where it would otherwise wait until CI's limit; what its
// failed test left running is stopped below. (Node 20 applies --test-timeout to each file; later
// versions to each test.)
// Not --test-force-exit: it ends a file's process as soon as its tests are done, and what of the
// file's report was still waiting for the pipe to the runner is cut off. Node 20's runner then
// reads the cut report for ever, at full CPU and deaf to SIGTERM (nodejs/node#62693): a test
// whose report outgrows the pipe hangs every time, and a runner that reads late (two runs at once
// on this machine's two cores) hung on an ordinary file's.
const FILE_TIMEOUT_MS = 300_000;
// What the runner cannot recover from (such as the above) fails the run after 20 minutes instead
// of holding CI to its limit; a run takes 3-4.
const RUN_TIMEOUT_MS = 1_200_000;
const args = ["--test", "--test-concurrency=2", `--test-timeout=${FILE_TIMEOUT_MS}`];
const result = spawnSync(process.execPath, [...args, ...files], {
  stdio: "inherit",
  env,
  timeout: RUN_TIMEOUT_MS,
  killSignal: "SIGKILL",
});
if (result.error) console.error(`node's test runner was stopped: ${result.error.message}`);
stopLeftovers(env.TMPDIR);
postgres?.stop();
if (result.status !== 0) console.error(`the run's temp files are kept in ${env.TMPDIR}`);
else {
  try {
    rmSync(env.TMPDIR, { recursive: true, force: true, maxRetries: 3 });
  } catch (err) {
    console.error(`the run's temp files could not all be removed from ${env.TMPDIR}: ${err.message}`);
  }
}
process.exit(result.status ?? 1);

/**
 * Stops, and names, what the tests started and left running: the servers of a file that failed
 * or timed out, orphaned when its process ended. They are the processes with this run's TMPDIR
 * (Linux: /proc).
 */
function stopLeftovers(runDir) {
  let pids;
  try {
    pids = readdirSync("/proc").filter((name) => /^\d+$/.test(name) && Number(name) !== process.pid);
  } catch {
    return; // no /proc: not Linux
  }
  for (const pid of pids) {
    try {
      if (!readFileSync(`/proc/${pid}/environ`, "utf8").split("\0").includes(`TMPDIR=${runDir}`)) continue;
      const command = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").join(" ").trim();
      process.kill(Number(pid), "SIGKILL");
      console.error(`left running by the tests, now stopped: ${pid} ${command}`);
    } catch {
      // gone meanwhile, or not ours to read
    }
  }
}
