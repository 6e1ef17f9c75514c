// The `agentcraft` command (also `switchyard agentcraft`): every command of spec 003 §4, each a
// call of the daemon's RPC over its socket. No subcommand starts an interactive REPL.
import path from "node:path";
import { createInterface } from "node:readline/promises";
import { Command, CommanderError, InvalidArgumentError, Option } from "commander";
import { agentCraftPaths, type AgentCraftPaths } from "../../faces/agentcraft/home.js";
import { VERSION } from "../../version.js";
import { callOnce, describeError, type Method, type Params, type Result } from "./client.js";
import { COLUMNS, FORMATS, formatList, formatOne, type Format } from "./format.js";

type Out = (text: string) => void;

const formatOption = (): Option => new Option("-f, --format <format>", "output format").choices(FORMATS).default("table");

function positiveInt(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n <= 0) throw new InvalidArgumentError("expected a positive integer");
  return n;
}

/** Builds the program; `out` receives everything printed to stdout. */
export function buildProgram(paths: AgentCraftPaths, out: Out): Command {
  const call = <M extends Method>(method: M, params: Params<M>): Promise<Result<M>> => callOnce(paths.socket, method, params);
  const list = (rows: unknown[], columns: readonly string[], format: Format): void =>
    out(formatList(rows as Array<Record<string, unknown>>, columns, format));
  const one = (row: unknown, format: Format, nameKey = "name"): void => out(formatOne(row as Record<string, unknown>, nameKey, format));

  const program = new Command("agentcraft")
    .description("Manage AI agents from templates: create, start, chat, proxy to editors, serve to other agents.")
    .version(VERSION, "-V, --version")
    .showHelpAfterError();

  // ---- templates ----
  const template = program.command("template").alias("tpl").description("Agent templates");
  template
    .command("list")
    .addOption(formatOption())
    .action(async (o: { format: Format }) => {
      const templates = await call("template.list", {});
      list(
        templates.map((t) => ({ ...t, backend: t.backend.type })),
        COLUMNS.template,
        o.format,
      );
    });
  template
    .command("show <name>")
    .addOption(formatOption())
    .action(async (name: string, o: { format: Format }) => one(await call("template.get", { name }), o.format));
  template.command("validate <file>").action(async (file: string) => {
    const result = await call("template.validate", { filePath: path.resolve(file) });
    if (result.valid) out(`${file} is a valid template (${result.template?.name} ${result.template?.version})`);
    else {
      out(`${file} is not a valid template:`);
      for (const e of result.errors ?? []) out(`  ${e.path || "(file)"}: ${e.message}`);
      process.exitCode = 1;
    }
  });
  template.command("load <file>").action(async (file: string) => {
    const loaded = await call("template.load", { filePath: path.resolve(file) });
    out(`loaded template ${loaded.name} ${loaded.version}`);
  });

  // ---- agents ----
  const agent = program.command("agent").description("Agent instances");
  agent
    .command("create <name>")
    .requiredOption("-t, --template <template>", "template to create it from")
    .addOption(new Option("--launch-mode <mode>").choices(["direct", "acp-background", "acp-service", "one-shot"]))
    .option("--work-dir <dir>", "use this directory as the workspace (linked under instances/)")
    .option("--overwrite", "overwrite AgentCraft's files in an existing --work-dir")
    .option("--append", "append to existing files in --work-dir")
    .option("--ephemeral", "the workspace goes when the agent is detached with cleanup or run one-shot")
    .addOption(formatOption())
    .action(
      async (
        name: string,
        o: {
          template: string;
          launchMode?: string;
          workDir?: string;
          overwrite?: boolean;
          append?: boolean;
          ephemeral?: boolean;
          format: Format;
        },
      ) => {
        const overrides = {
          ...(o.launchMode ? { launchMode: o.launchMode as "direct" } : {}),
          ...(o.workDir ? { workDir: path.resolve(o.workDir) } : {}),
          ...(o.overwrite ? { workDirConflict: "overwrite" as const } : o.append ? { workDirConflict: "append" as const } : {}),
          ...(o.ephemeral ? { workspacePolicy: "ephemeral" as const } : {}),
        };
        one(await call("agent.create", { name, template: o.template, overrides }), o.format);
      },
    );
  for (const verb of ["start", "stop"] as const) {
    agent
      .command(`${verb} <name>`)
      .addOption(formatOption())
      .action(async (name: string, o: { format: Format }) => {
        const meta = await call(`agent.${verb}`, { name });
        if (o.format === "table") out(`${name}: ${meta.status}${meta.pid ? ` (pid ${meta.pid})` : ""}`);
        else one(meta, o.format);
      });
  }
  agent
    .command("status [name]")
    .addOption(formatOption())
    .action(async (name: string | undefined, o: { format: Format }) => {
      if (name) one(await call("agent.status", { name }), o.format);
      else list(await call("agent.list", {}), COLUMNS.agent, o.format);
    });
  agent
    .command("list")
    .addOption(formatOption())
    .action(async (o: { format: Format }) => list(await call("agent.list", {}), COLUMNS.agent, o.format));
  agent
    .command("destroy <name>")
    .option("--force", "also a running or corrupted instance")
    .action(async (name: string, o: { force?: boolean }) => {
      await call("agent.destroy", { name, ...(o.force ? { force: true } : {}) });
      out(`destroyed ${name}`);
    });
  agent
    .command("run <name>")
    .requiredOption("--prompt <text>", "the prompt")
    .option("--model <model>")
    .option("--max-turns <n>", "most agentic turns", positiveInt)
    .option("--timeout <ms>", "give up after this long (default 300000)", positiveInt)
    .option("--session-id <id>", "continue this session")
    .addOption(new Option("--format <format>").choices(["text", "json"]).default("text"))
    .action(
      async (
        name: string,
        o: { prompt: string; model?: string; maxTurns?: number; timeout?: number; sessionId?: string; format: string },
      ) => {
        const options = {
          ...(o.model ? { model: o.model } : {}),
          ...(o.maxTurns ? { maxTurns: o.maxTurns } : {}),
          ...(o.timeout ? { timeoutMs: o.timeout } : {}),
          ...(o.sessionId ? { sessionId: o.sessionId } : {}),
        };
        const result = (await call("agent.run", { name, prompt: o.prompt, options })) as { text: string; sessionId?: string };
        out(o.format === "json" ? JSON.stringify(result, null, 2) : result.text);
      },
    );
  agent
    .command("prompt <name>")
    .requiredOption("-m, --message <text>", "the message")
    .option("--session-id <id>", "the session to continue")
    .addOption(new Option("--format <format>").choices(["text", "json"]).default("text"))
    .action(async (name: string, o: { message: string; sessionId?: string; format: string }) => {
      const result = await call("agent.prompt", { name, message: o.message, ...(o.sessionId ? { sessionId: o.sessionId } : {}) });
      out(o.format === "json" ? JSON.stringify(result, null, 2) : result.response);
    });
  agent
    .command("chat <name>")
    .description("chat with the agent in the terminal, its answers streamed")
    .option("--model <model>", "(switchyard agents take their model from the template)")
    .option("--max-turns <n>", "ignored: turns end when the agent is done", positiveInt)
    .option("--session-id <id>", "ignored: each chat is a new session")
    .action(async (name: string) => (await import("./chat.js")).chat(paths.socket, name));
  agent
    .command("resolve <name>")
    .option("-t, --template <template>", "create the instance from this template when missing")
    .addOption(formatOption())
    .action(async (name: string, o: { template?: string; format: Format }) =>
      one(await call("agent.resolve", { name, ...(o.template ? { template: o.template } : {}) }), o.format, "instanceName"),
    );
  agent
    .command("attach <name>")
    .requiredOption("--pid <pid>", "the process the client spawned", positiveInt)
    .option("--metadata <key=value...>", "extra metadata")
    .action(async (name: string, o: { pid: number; metadata?: string[] }) => {
      const metadata = o.metadata
        ? Object.fromEntries(o.metadata.map((kv) => [kv.split("=")[0]!, kv.slice(kv.indexOf("=") + 1)]))
        : undefined;
      const meta = await call("agent.attach", { name, pid: o.pid, ...(metadata ? { metadata } : {}) });
      out(`${name}: ${meta.status} (attached to pid ${meta.pid})`);
    });
  agent
    .command("detach <name>")
    .option("--cleanup", "remove an ephemeral workspace")
    .action(async (name: string, o: { cleanup?: boolean }) => {
      const result = await call("agent.detach", { name, ...(o.cleanup ? { cleanup: true } : {}) });
      out(`${name}: detached${result.workspaceCleaned ? ", workspace removed" : ""}`);
    });

  // ---- domain components ----
  for (const kind of ["skill", "prompt", "mcp", "workflow"] as const) {
    const command = program
      .command(kind)
      .description(
        kind === "mcp" ? "MCP server definitions; with no subcommand, serve AgentCraft over MCP on stdio" : `${kind} definitions`,
      );
    command
      .command("list")
      .addOption(formatOption())
      .action(async (o: { format: Format }) => list(await call(`${kind}.list`, {}), COLUMNS.component, o.format));
    command
      .command("show <name>")
      .addOption(formatOption())
      .action(async (name: string, o: { format: Format }) => one(await call(`${kind}.get`, { name }), o.format));
    if (kind === "mcp") {
      command.action(async () => (await import("./mcp.js")).serveMcp(paths.socket));
      command
        .command("serve")
        .description("serve AgentCraft's tools over MCP on stdio")
        .action(async () => (await import("./mcp.js")).serveMcp(paths.socket));
    }
  }

  // ---- proxy and daemon ----
  program
    .command("proxy <name>")
    .description("serve the agent to an ACP client on stdio (spawned by the editor)")
    .option("--lease", "lease a session of the daemon's running agent instead of spawning one")
    .option("-t, --template <template>", "create the instance from this template when missing")
    .action(async (name: string, o: { lease?: boolean; template?: string }) => {
      const proxy = await import("./proxy.js");
      process.exitCode = o.lease
        ? await proxy.leaseProxy(paths.socket, name, o.template)
        : await proxy.directBridge(paths.socket, name, o.template);
    });
  const daemon = program.command("daemon").description("The AgentCraft daemon");
  daemon
    .command("start")
    .option("--foreground", "run in this process instead of detaching")
    .option("--listen <url>", "also serve the AppServer protocol on ws://HOST:PORT (threads of every agent)")
    .addOption(new Option("--watch-interval-ms <n>", "how often agent processes are checked").argParser(positiveInt).hideHelp())
    .action(async (o: { foreground?: boolean; listen?: string; watchIntervalMs?: number }) => {
      const d = await import("./daemon.js");
      if (o.foreground) await d.runDaemon(paths, o);
      else process.exitCode = await d.startDetached(paths, o, out);
    });
  daemon.command("stop").action(async () => {
    process.exitCode = await (await import("./daemon.js")).stopDaemon(paths, out);
  });
  daemon
    .command("status")
    .addOption(formatOption())
    .action(async (o: { format: Format }) => {
      const ping = await call("daemon.ping", {});
      if (o.format === "table")
        out(`running: version ${ping.version}, up ${ping.uptime} s, ${ping.agents} agent(s) running, socket ${paths.socket}`);
      else one({ ...ping, socket: paths.socket }, o.format, "version");
    });
  return program;
}

/** Runs one command line; resolves with its exit code. */
export async function runAgentCraft(argv: string[], env: NodeJS.ProcessEnv = process.env): Promise<number> {
  const paths = agentCraftPaths(env);
  const out: Out = (text) => process.stdout.write(`${text}\n`);
  if (argv.length === 0) return repl(paths, out);
  const program = buildProgram(paths, out).exitOverride();
  try {
    await program.parseAsync(argv, { from: "user" });
    return typeof process.exitCode === "number" ? process.exitCode : 0;
  } catch (error) {
    if (error instanceof CommanderError) return error.exitCode;
    process.stderr.write(`agentcraft: ${describeError(error)}\n`);
    return 1;
  }
}

/** The interactive REPL: each line is a command, as on the command line. */
async function repl(paths: AgentCraftPaths, out: Out): Promise<number> {
  const rl = createInterface({ input: process.stdin, output: process.stdout, prompt: "agentcraft> " });
  out(`AgentCraft ${VERSION} (Switchyard). Type a command such as "agent list", "help", or "exit".`);
  rl.prompt();
  for await (const line of rl) {
    const words = splitWords(line.trim());
    if (words[0] === "exit" || words[0] === "quit") break;
    if (words.length > 0) {
      const program = buildProgram(paths, out).exitOverride();
      program.configureOutput({ writeErr: (s) => process.stderr.write(s) });
      try {
        await program.parseAsync(words[0] === "help" ? ["--help"] : words, { from: "user" });
      } catch (error) {
        if (!(error instanceof CommanderError)) process.stderr.write(`agentcraft: ${describeError(error)}\n`);
      }
    }
    rl.prompt();
  }
  rl.close();
  return 0;
}

/** Splits a line into words, honouring single and double quotes. */
export function splitWords(line: string): string[] {
  return [...line.matchAll(/"([^"]*)"|'([^']*)'|(\S+)/g)].map((m) => m[1] ?? m[2] ?? m[3]!);
}
