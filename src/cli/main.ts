#!/usr/bin/env node
// The `switchyard` command (also installed as `dotcraft`, so clients written against the
// AppServer document run unmodified).
import { Command, InvalidArgumentError, Option } from "commander";
import { createLogger, LOG_LEVELS, type LogLevel } from "../log.js";
import { VERSION } from "../version.js";
import { resolveServerConfig, type AppServerFlags } from "./config.js";

const program = new Command()
  .name("switchyard")
  .description("One local server for AI coding-agent sessions, speaking the app-server protocol family.")
  .version(VERSION)
  .showHelpAfterError();

program
  .command("app-server")
  .description("Serve the AppServer protocol over stdio (default) and/or WebSocket.")
  .option("--listen <url...>", "stdio:// and/or ws://HOST:PORT (repeatable)", ["stdio://"])
  .addOption(new Option("--transport <kind>", "claude-app-server style: stdio or ws (with --port)").choices(["stdio", "ws"]))
  .option("--port <n>", "WebSocket port for --transport ws", positiveInt)
  .option("--dialect <face>", "serve only this protocol dialect (appserver | claude) instead of choosing at initialize")
  .option("--data-dir <dir>", "where threads are persisted (env SWITCHYARD_HOME, default ~/.switchyard)")
  .option("--provider <name>", "model provider: openai-chat | anthropic")
  .option("--model <name>", "default model")
  .option("--token <token>", "WebSocket access token (env SWITCHYARD_TOKEN)")
  .option("--token-file <path>", "read the WebSocket access token from a file")
  .option("--allow-origin <origin...>", "browser Origins allowed to connect (default: none)")
  .option("--allow-host <host...>", "extra Host header names allowed besides loopback names")
  .option("--max-message-bytes <n>", "largest accepted incoming message", positiveInt, 4 * 1024 * 1024)
  .option("--max-in-flight <n>", "concurrent requests per connection before -32001", positiveInt, 64)
  .option("--approval-timeout-ms <n>", "how long an approval waits for a client", positiveInt, 5 * 60_000)
  .option("--command-timeout-ms <n>", "default shell command timeout", positiveInt, 10 * 60_000)
  .option("--ping-interval-ms <n>", "WebSocket ping interval", positiveInt, 30_000)
  .addOption(new Option("--log-level <level>", "log level (env SWITCHYARD_LOG_LEVEL)").choices([...LOG_LEVELS]))
  .action(async (flags: AppServerFlags) => {
    const level = (flags.logLevel ?? process.env.SWITCHYARD_LOG_LEVEL ?? "info") as LogLevel;
    const log = createLogger(LOG_LEVELS.includes(level) ? level : "info");
    const config = resolveServerConfig(flags, process.env);
    const { startServer } = await import("../server.js");
    const server = await startServer(config, log);
    const stop = (signal: string): void => {
      log.info({ signal }, "shutting down");
      void server.stop();
    };
    process.once("SIGINT", () => stop("SIGINT"));
    process.once("SIGTERM", () => stop("SIGTERM"));
    await server.closed;
    log.info("stopped");
    process.exit(0);
  });

function positiveInt(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n <= 0) throw new InvalidArgumentError("expected a positive integer");
  return n;
}

program.parseAsync().catch((error: unknown) => {
  process.stderr.write(`switchyard: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
