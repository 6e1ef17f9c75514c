#!/usr/bin/env node
// The `switchyard` command (also installed as `dotcraft`, the command name AppServer protocol
// clients spawn, so they run unmodified). Editors spawn `app-server` (Zed: `acp`) once per
// window, AgentCompany clients `agentcompany server:start`; those command lines are parsed from
// the option tables without loading commander, everything else (help, errors, the other
// commands) goes to the commander program.
import type { AcpFlags, AppServerFlags } from "./config.js";
import { ACP_OPTIONS, AGENTCOMPANY_OPTIONS, APP_SERVER_OPTIONS, parseOptions, RUNTIME_OPTIONS, WEBSOCKET_OPTIONS } from "./options.js";
import { serveAcp, serveAgentCompany, serveAppServer } from "./serve.js";

async function run([command, ...args]: string[]): Promise<void> {
  if (command === "app-server") {
    const flags = parseOptions([APP_SERVER_OPTIONS, RUNTIME_OPTIONS, WEBSOCKET_OPTIONS], args);
    if (flags) return serveAppServer(flags as unknown as AppServerFlags);
  }
  if (command === "acp") {
    const flags = parseOptions([ACP_OPTIONS, RUNTIME_OPTIONS, WEBSOCKET_OPTIONS], args);
    if (flags) return serveAcp(flags as unknown as AcpFlags);
  }
  if (command === "agentcompany" && args[0] === "server:start") {
    const flags = parseOptions([AGENTCOMPANY_OPTIONS, RUNTIME_OPTIONS, WEBSOCKET_OPTIONS], args.slice(1));
    if (flags) return serveAgentCompany(flags as unknown as AppServerFlags);
  }
  if (command === "agentcraft") {
    // `switchyard agentcraft …` is the `agentcraft` command, with its own parser.
    const { runAgentCraft } = await import("./agentcraft/main.js");
    process.exitCode = await runAgentCraft(args);
    return;
  }
  const { runProgram } = await import("./program.js");
  await runProgram();
}

await run(process.argv.slice(2)).catch((error: unknown) => {
  process.stderr.write(`switchyard: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
