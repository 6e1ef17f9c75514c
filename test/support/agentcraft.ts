// An AgentCraft home for end-to-end tests: a temporary AGENTCRAFT_HOME with configs, the built
// `agentcraft` CLI run as a real process, a foreground daemon, and an RPC client of its socket.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { DaemonClient } from "../../src/cli/agentcraft/client.js";
import { delay } from "../../src/timers.js";
import { childEnv, exitWithin, keepLogBeside, tempDir } from "./server-process.js";

export const AGENTCRAFT_CLI = fileURLToPath(new URL("../../agentcraft.js", import.meta.url));

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** A valid template whose agents run on Switchyard (the default backend). */
export function template(name: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { name, version: "1.0.0", description: `${name} agent`, backend: { type: "switchyard" }, ...extra };
}

export class AgentCraftHome {
  readonly home = tempDir("agentcraft");
  readonly socket = path.join(this.home, "agentcraft.sock");
  daemon: DaemonProcess | undefined;

  constructor(readonly env: Record<string, string> = {}) {}

  /** Writes a config file (configs/<kind>/<name>.json) before the daemon starts. */
  config(kind: "templates" | "skills" | "prompts" | "mcp" | "workflows", value: Record<string, unknown>): void {
    mkdirSync(path.join(this.home, "configs", kind), { recursive: true });
    writeFileSync(path.join(this.home, "configs", kind, `${String(value.name)}.json`), JSON.stringify(value));
  }

  /** A file outside configs (for template validate/load). */
  file(name: string, content: string | Record<string, unknown>): string {
    const file = path.join(this.home, "files", name);
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, typeof content === "string" ? content : JSON.stringify(content));
    return file;
  }

  processEnv(): NodeJS.ProcessEnv {
    return childEnv({ AGENTCRAFT_HOME: this.home, ...this.env });
  }

  /** Runs `agentcraft <args>` to its end. */
  cli(...args: string[]): Promise<CliResult> {
    return new Promise((resolve) => {
      const child = spawn(process.execPath, [AGENTCRAFT_CLI, ...args], { env: this.processEnv(), stdio: ["ignore", "pipe", "pipe"] });
      let stdout = "";
      let stderr = "";
      child.stdout.setEncoding("utf8").on("data", (c: string) => (stdout += c));
      child.stderr.setEncoding("utf8").on("data", (c: string) => (stderr += c));
      child.once("close", (code) => resolve({ code, stdout, stderr }));
    });
  }

  /** Starts `agentcraft daemon start --foreground` and waits until it listens. */
  async startDaemon(...args: string[]): Promise<DaemonProcess> {
    const child = spawn(process.execPath, [AGENTCRAFT_CLI, "daemon", "start", "--foreground", "--watch-interval-ms", "100", ...args], {
      env: this.processEnv(),
      stdio: ["ignore", "ignore", "pipe"],
    });
    keepLogBeside(this.home, child.stderr);
    this.daemon = new DaemonProcess(child);
    await this.daemon.waitForLog((l) => l.msg === "agentcraft daemon listening");
    return this.daemon;
  }

  client(handlers: Parameters<typeof DaemonClient.connect>[1] = {}): Promise<DaemonClient> {
    return DaemonClient.connect(this.socket, handlers);
  }

  meta(name: string): Record<string, unknown> {
    return JSON.parse(readFileSync(path.join(this.home, "instances", name, ".agentcraft.json"), "utf8")) as Record<string, unknown>;
  }

  async stop(): Promise<void> {
    await this.daemon?.stop();
  }
}

export class DaemonProcess {
  stderr = "";
  readonly exited: Promise<number | null>;

  constructor(readonly child: ChildProcess) {
    child.stderr!.setEncoding("utf8").on("data", (c: string) => (this.stderr += c));
    this.exited = new Promise((resolve) => child.once("exit", (code) => resolve(code)));
  }

  logs(): Array<Record<string, unknown>> {
    return this.stderr.split("\n").flatMap((line) => {
      try {
        return [JSON.parse(line) as Record<string, unknown>];
      } catch {
        return [];
      }
    });
  }

  async waitForLog(match: (line: Record<string, unknown>) => boolean, timeoutMs = 15_000): Promise<Record<string, unknown>> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = this.logs().find(match);
      if (found) return found;
      if (this.child.exitCode !== null) throw new Error(`the daemon exited (${this.child.exitCode}):\n${this.stderr}`);
      if (Date.now() > deadline) throw new Error(`no such log line within ${timeoutMs} ms:\n${this.stderr.slice(-3000)}`);
      await new Promise<void>((resolve) => {
        const wake = (): void => resolve();
        this.child.stderr!.once("data", wake);
        void delay(200).then(wake);
      });
    }
  }

  async stop(): Promise<void> {
    if (this.child.exitCode === null) this.child.kill("SIGTERM");
    await exitWithin(this.child, this.exited, "the AgentCraft daemon", () => this.stderr);
  }
}

/** Polls until `check` returns a value (state a CLI or RPC call reads; there is no event to await). */
export async function eventually<T>(check: () => Promise<T | undefined>, what: string, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
