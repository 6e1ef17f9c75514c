// `agentcraft daemon start|stop`: the daemon is a Switchyard server whose AgentCraft face listens
// on the socket (its threads persist under the home's switchyard/); start without --foreground
// detaches it and returns once the socket answers.
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, openSync, readFileSync } from "node:fs";
import { agentCraftFace } from "../../faces/agentcraft/index.js";
import type { AgentCraftPaths } from "../../faces/agentcraft/home.js";
import { switchyardCli } from "../../faces/agentcraft/launch.js";
import { setTimeout as delay } from "node:timers/promises";
import { socketAnswers } from "../../transport/unix-socket.js";
import { resolveServerConfig } from "../config.js";
import { serve } from "../serve.js";
import { callOnce } from "./client.js";

export interface DaemonFlags {
  listen?: string;
  watchIntervalMs?: number;
}

/** Agents of a daemon stay up between prompts until stopped (not the app-server's idle timeout). */
const AGENT_IDLE_TIMEOUT_MS = 7 * 24 * 3600_000;
const START_TIMEOUT_MS = 15_000;

export async function runDaemon(paths: AgentCraftPaths, flags: DaemonFlags): Promise<void> {
  mkdirSync(paths.home, { recursive: true, mode: 0o700 });
  if (await socketAnswers(paths.socket)) {
    throw new Error(`A daemon is already running (it answers on ${paths.socket}).`);
  }
  await serve({}, async () => {
    const config = await resolveServerConfig(
      {
        listen: flags.listen ? [flags.listen] : [],
        dataDir: paths.data,
        maxMessageBytes: 16 * 1024 * 1024,
        maxInFlight: 64,
        pingIntervalMs: 30_000,
        outputBudgetBytes: 1024 * 1024,
        stallTimeoutMs: 60_000,
        agentIdleTimeoutMs: AGENT_IDLE_TIMEOUT_MS,
      },
      // The daemon is per machine: its threads stay in its own data directory, whatever
      // PostgreSQL store the environment names for app-servers.
      { ...process.env, SWITCHYARD_DATABASE_URL: undefined },
    );
    const options = { paths, ...(flags.watchIntervalMs ? { watchIntervalMs: flags.watchIntervalMs } : {}) };
    return { ...config, faceListeners: [{ face: agentCraftFace.name, options: options as unknown as Record<string, unknown> }] };
  });
}

export async function startDetached(paths: AgentCraftPaths, flags: DaemonFlags, out: (text: string) => void): Promise<number> {
  mkdirSync(paths.home, { recursive: true, mode: 0o700 });
  if (await socketAnswers(paths.socket)) {
    out(`A daemon is already running (socket ${paths.socket}).`);
    return 1;
  }
  const log = openSync(paths.logFile, "a", 0o600);
  const args = [switchyardCli(), "agentcraft", "daemon", "start", "--foreground"];
  if (flags.listen) args.push("--listen", flags.listen);
  if (flags.watchIntervalMs) args.push("--watch-interval-ms", String(flags.watchIntervalMs));
  const child = spawn(process.execPath, args, { detached: true, stdio: ["ignore", log, log], env: process.env });
  let exited: number | null | undefined;
  child.once("exit", (code) => (exited = code));
  child.unref();
  // Started once its socket answers and it has written daemon.pid (just after it listens): what
  // runs next may read the pid. A daemon killed outright left its pid there; that one is not ours.
  const pidWritten = (): boolean => {
    try {
      return Number(readFileSync(paths.pidFile, "utf8")) === child.pid;
    } catch {
      return false;
    }
  };
  const deadline = Date.now() + START_TIMEOUT_MS;
  while (Date.now() < deadline) {
    if (exited !== undefined) break;
    if (pidWritten() && (await socketAnswers(paths.socket))) {
      out(`daemon started (pid ${child.pid}, socket ${paths.socket}, log ${paths.logFile})`);
      return 0;
    }
    await delay(50);
  }
  const tail = readFileSync(paths.logFile, "utf8").split("\n").slice(-10).join("\n");
  process.stderr.write(
    `agentcraft: the daemon did not start${exited !== undefined ? ` (exited with code ${exited})` : ""}. Its log:\n${tail}\n`,
  );
  return 1;
}

export async function stopDaemon(paths: AgentCraftPaths, out: (text: string) => void): Promise<number> {
  await callOnce(paths.socket, "daemon.shutdown", {});
  const deadline = Date.now() + START_TIMEOUT_MS;
  while (Date.now() < deadline && (existsSync(paths.pidFile) || (await socketAnswers(paths.socket)))) await delay(50);
  out("daemon stopped");
  return 0;
}
