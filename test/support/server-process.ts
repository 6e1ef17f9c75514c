// Spawns the built CLI as a real process, for end-to-end tests and benchmarks.
import { spawn, spawnSync, type ChildProcess, type ChildProcessWithoutNullStreams, type SpawnSyncReturns } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import type { Readable } from "node:stream";
import { fileURLToPath } from "node:url";
import { testStoreEnv } from "./postgres.js";

export { freePort } from "./ports.js";

export const CLI_PATH = fileURLToPath(new URL("../../switchyard.js", import.meta.url));

/** Runs a one-shot CLI command (`db migrate`, `cluster status`, `doctor`) to its end, with empty stdin. */
export function runCli(...args: string[]): SpawnSyncReturns<string> {
  return spawnSync(process.execPath, [CLI_PATH, ...args], { input: "", encoding: "utf8", timeout: 20_000 });
}

export function tempDir(prefix: string): string {
  return fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), `switchyard-${prefix}-`)));
}

/**
 * What a spawned Switchyard's environment changes from this one's (undefined: unset): no model
 * keys, endpoints or token the developer may have set (a test sets its own), and debug logs.
 */
export const CHILD_ENV_CHANGES: Record<string, string | undefined> = {
  OPENAI_API_KEY: undefined,
  OPENAI_BASE_URL: undefined,
  ANTHROPIC_API_KEY: undefined,
  ANTHROPIC_BASE_URL: undefined,
  SWITCHYARD_TOKEN: undefined,
  SWITCHYARD_LOG_LEVEL: "debug",
};

/** The environment of a spawned Switchyard: this one's with CHILD_ENV_CHANGES and `extra`. */
export function childEnv(extra: Record<string, string | undefined> = {}): NodeJS.ProcessEnv {
  const env: Record<string, string | undefined> = { ...process.env, ...CHILD_ENV_CHANGES, ...extra };
  return Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined)) as NodeJS.ProcessEnv;
}

export interface SpawnOptions {
  /** The subcommand (default `app-server`); a list for nested ones, e.g. ["yeaft", "relay"]. */
  command?: string | string[];
  /** Extra arguments after the subcommand. */
  args?: string[];
  env?: Record<string, string | undefined>;
  dataDir?: string;
  cwd?: string;
  /** Flags for node itself, e.g. ["--cpu-prof"] when profiling. */
  nodeArgs?: string[];
}

/**
 * Under the test runner a server's log is also written beside its data directory
 * (`<dir>.stderr.log`): a failed run keeps its temp files (scripts/run-tests.mjs), and with them
 * what each server said. Not under the benchmarks, whose clients share the CPU with the servers.
 */
export function keepLogBeside(dataDir: string, stderr: Readable): void {
  if (process.env.NODE_TEST_CONTEXT) stderr.pipe(fs.createWriteStream(`${dataDir}.stderr.log`, { flags: "a" }));
}

/** How long a process gets to exit once told to (a signal, its stdin closed) before a test calls it hung. */
export const EXIT_WAIT_MS = 30_000;

/**
 * `exited`, or, when the process takes longer than EXIT_WAIT_MS, an error that names it with the
 * end of its log (and the process killed): a shutdown that hangs fails its test, not its file.
 */
export async function exitWithin<T>(child: ChildProcess, exited: Promise<T>, what: string, log: () => string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const hung = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`${what} did not exit within ${EXIT_WAIT_MS / 1000} s; its log ends:\n${log().slice(-3000)}`));
    }, EXIT_WAIT_MS);
  });
  try {
    return await Promise.race([exited, hung]);
  } finally {
    clearTimeout(timer);
  }
}

/** Servers still running; whatever a failed test left behind is killed when its file ends. */
const running = new Set<ServerProcess>();
// Only under the test runner: once node:test's harness exists it tracks every promise of the
// process (an async hook with destroy tracking), which cost the benchmarks' clients and fake
// model a fifth of their CPU. The benchmarks stop their servers themselves.
if (process.env.NODE_TEST_CONTEXT) {
  const { after } = await import("node:test");
  after(() => Promise.all([...running].map((server) => server.kill("SIGKILL"))));
}

export class ServerProcess {
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  stderr = "";
  private stderrWaiters: Array<() => void> = [];

  private constructor(
    readonly child: ChildProcessWithoutNullStreams,
    readonly dataDir: string,
  ) {
    child.stderr.setEncoding("utf8");
    child.stderr.on("data", (chunk: string) => {
      this.stderr += chunk;
      for (const wake of this.stderrWaiters.splice(0)) wake();
    });
    this.exited = new Promise((resolve) => child.once("exit", (code, signal) => resolve({ code, signal })));
    running.add(this);
    void this.exited.then(() => running.delete(this));
  }

  static spawn(opts: SpawnOptions = {}): ServerProcess {
    const dataDir = opts.dataDir ?? tempDir("data");
    const env = childEnv({ ...testStoreEnv(dataDir), ...opts.env });
    const child = spawn(
      process.execPath,
      [...(opts.nodeArgs ?? []), CLI_PATH, ...[opts.command ?? "app-server"].flat(), "--data-dir", dataDir, ...(opts.args ?? [])],
      {
        cwd: opts.cwd ?? dataDir,
        env,
        stdio: ["pipe", "pipe", "pipe"],
      },
    );
    keepLogBeside(dataDir, child.stderr);
    return new ServerProcess(child, dataDir);
  }

  /** Resolves with the first stderr log line (parsed JSON) that matches. */
  async waitForLog(match: (line: Record<string, unknown>) => boolean, timeoutMs = 10_000): Promise<Record<string, unknown>> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      for (const text of this.stderr.split("\n")) {
        if (!text.startsWith("{")) continue;
        const line = JSON.parse(text) as Record<string, unknown>;
        if (match(line)) return line;
      }
      if (this.child.exitCode !== null)
        throw new Error(`server exited (${this.child.exitCode}) before the log line appeared:\n${this.stderr}`);
      if (Date.now() > deadline) throw new Error(`timed out waiting for a log line:\n${this.stderr}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, deadline - Date.now());
        this.stderrWaiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
        this.child.once("exit", () => resolve());
      });
    }
  }

  /** The WebSocket URL the server logged when it started listening. */
  async websocketUrl(): Promise<string> {
    const line = await this.waitForLog((l) => l.msg === "listening");
    return String(line.url);
  }

  async kill(signal: NodeJS.Signals = "SIGTERM"): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill(signal);
    return exitWithin(this.child, this.exited, `the server of ${this.dataDir}`, () => this.stderr);
  }
}
