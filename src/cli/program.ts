// The `switchyard` command's commander program: every command, its help and its errors. The
// common spawns skip it (main.ts); their options come from the tables in options.ts.
import { Command, InvalidArgumentError, Option } from "commander";
import { serve, serveAcp, serveAgentCompany, serveAppServer } from "./serve.js";
import { VERSION } from "../version.js";
import path from "node:path";
import type { Persona } from "../faces/yeaft/driver.js";
import { resolveDataDir, resolveServerConfig, type AppServerFlags } from "./config.js";
import type { DoctorFlags } from "./doctor.js";
import {
  ACP_OPTIONS,
  AGENTCOMPANY_OPTIONS,
  APP_SERVER_OPTIONS,
  HEARTBEAT_OPTIONS,
  positiveInt,
  RUNTIME_OPTIONS,
  WEBSOCKET_OPTIONS,
  type OptionSpec,
} from "./options.js";

const program = new Command()
  .name("switchyard")
  .description("One local server for AI coding-agent sessions, speaking the app-server protocol family.")
  .version(VERSION)
  .showHelpAfterError();

/**
 * The option sets shared by the serving commands are added to a command only when it is the one
 * run, just before it parses its arguments: building them for every command cost each start
 * ~7 ms. Help for a command is shown after the hook too, so it lists them.
 */
const optionSets = new Map<Command, Array<(command: Command) => Command>>();
function withOptionSets(command: Command, ...sets: Array<(command: Command) => Command>): Command {
  optionSets.set(command, sets);
  return command;
}
function addOptionSets(_parent: Command, command: Command): void {
  for (const add of optionSets.get(command) ?? []) add(command);
  optionSets.delete(command);
}
program.hook("preSubcommand", addOptionSets);

/** A table's options, for commander. */
export function addOptions(specs: readonly OptionSpec[]) {
  return (command: Command): Command => {
    for (const spec of specs) command.addOption(toOption(spec));
    return command;
  };
}
function toOption(spec: OptionSpec): Option {
  const value = spec.value ? ` <${spec.value}${spec.repeatable ? "..." : ""}>` : "";
  const option = new Option(`--${spec.flag}${value}`, spec.description);
  if (spec.choices) option.choices(spec.choices);
  if (spec.parse) option.argParser(argument(spec.parse));
  if (spec.default !== undefined) option.default(spec.default);
  if (spec.hidden) option.hideHelp();
  return option;
}
/** A converter whose errors commander reports as a bad argument. */
function argument<T>(parse: (text: string) => T): (text: string) => T {
  return (text) => {
    try {
      return parse(text);
    } catch (error) {
      throw new InvalidArgumentError(error instanceof Error ? error.message : String(error));
    }
  };
}
const addRuntimeOptions = addOptions(RUNTIME_OPTIONS);
const addHeartbeatOptions = addOptions(HEARTBEAT_OPTIONS);
const addWebSocketOptions = addOptions(WEBSOCKET_OPTIONS);

withOptionSets(
  program.command("app-server").description("Serve the AppServer protocol over stdio (default) and/or WebSocket."),
  addOptions(APP_SERVER_OPTIONS),
  addRuntimeOptions,
  addWebSocketOptions,
).action(serveAppServer);

withOptionSets(
  program.command("acp").description("Serve Switchyard's agent over the Agent Client Protocol on stdio (for editors such as Zed)."),
  addOptions(ACP_OPTIONS),
  addRuntimeOptions,
  addWebSocketOptions,
).action(serveAcp);

withOptionSets(
  program
    .command("agentcompany")
    .description("The AgentCompany control plane (also `ac`): `agentcompany server:start` serves protocol v1 on stdio.")
    .argument("<command>", "server:start"),
  addOptions(AGENTCOMPANY_OPTIONS),
  addRuntimeOptions,
  addWebSocketOptions,
).action((command: string, flags: AppServerFlags) => {
  if (command !== "server:start") throw new InvalidArgumentError(`unknown command "${command}"; the command is server:start`);
  return serveAgentCompany(flags);
});

/** `switchyard yeaft …`: the relay, the agent driver, both, and users. */
const yeaft = program
  .command("yeaft")
  .description("The Yeaft relay and agent driver (browsers chat with agents on users' machines).")
  .hook("preSubcommand", addOptionSets);
const yeaftServe = (flags: AppServerFlags & YeaftFlags, relay: boolean, agent: boolean): Promise<void> =>
  serve(flags, async () => {
    const config = await resolveServerConfig({ ...flags, listen: [] }, process.env);
    const heartbeat = {
      ...(flags.pingIntervalMs ? { pingIntervalMs: flags.pingIntervalMs } : {}),
      ...(flags.deadAfterMs ? { deadAfterMs: flags.deadAfterMs } : {}),
    };
    const options = {
      ...(relay
        ? {
            relay: {
              host: flags.host ?? "127.0.0.1",
              port: flags.port ?? 8420,
              dataDir: path.join(config.dataDir, "yeaft"),
              ...(flags.jwtSecret || process.env.YEAFT_JWT_SECRET ? { jwtSecret: flags.jwtSecret ?? process.env.YEAFT_JWT_SECRET } : {}),
              ...(flags.allowOrigin ? { allowedOrigins: flags.allowOrigin } : {}),
              ...heartbeat,
            },
          }
        : {}),
      ...(agent
        ? {
            agent: {
              server: flags.server ?? "",
              secret: flags.secret ?? process.env.YEAFT_AGENT_SECRET ?? "",
              ...(flags.name ? { name: flags.name } : {}),
              ...(flags.personas ? { personas: await readPersonasFile(flags.personas) } : {}),
              ...heartbeat,
            },
          }
        : {}),
    };
    return { ...config, faceListeners: [{ face: "yeaft", options }] };
  });
/** A personas file (a JSON array of {name, description?, systemPrompt, model?}), checked. */
async function readPersonasFile(file: string): Promise<Persona[]> {
  const { readPersonas } = await import("../faces/yeaft/personas.js");
  const read = readPersonas(file);
  if (typeof read === "string") throw new InvalidArgumentError(read);
  return read;
}
interface YeaftFlags {
  deadAfterMs?: number;
  personas?: string;
  host?: string;
  port?: number;
  jwtSecret?: string;
  server?: string;
  secret?: string;
  name?: string;
}
withOptionSets(
  yeaft
    .command("relay")
    .description("Serve the relay: HTTP and WebSocket on one port (login API, agents and browsers).")
    .option("--host <host>", "address to bind (default 127.0.0.1; another needs --jwt-secret)")
    .option("--port <n>", "port (default 8420)", argument(positiveInt))
    .option("--jwt-secret <secret>", "signs browser tokens (env YEAFT_JWT_SECRET)")
    .option("--allow-origin <origin...>", "browser Origins allowed besides the relay's own"),
  addRuntimeOptions,
  addHeartbeatOptions,
).action((flags: AppServerFlags & YeaftFlags) => yeaftServe(flags, true, false));
withOptionSets(
  yeaft
    .command("agent")
    .description("Run this machine's agent: connect to a relay and run its users' conversations.")
    .requiredOption("--server <url>", "the relay, e.g. ws://127.0.0.1:8420/")
    .option("--secret <secret>", "the owner's agent secret (env YEAFT_AGENT_SECRET)")
    .option("--name <name>", "how browsers see this agent (default: the host name)")
    .option("--personas <file>", "group-chat personas: a JSON array of {name, description, systemPrompt, model}"),
  addRuntimeOptions,
  addHeartbeatOptions,
).action((flags: AppServerFlags & YeaftFlags) => yeaftServe(flags, false, true));
withOptionSets(
  yeaft
    .command("serve", { isDefault: true })
    .description("Relay and a local agent (for the first user) in one process.")
    .option("--host <host>", "address to bind (default 127.0.0.1)")
    .option("--port <n>", "port (default 8420)", argument(positiveInt))
    .option("--jwt-secret <secret>", "signs browser tokens (env YEAFT_JWT_SECRET)")
    .option("--personas <file>", "group-chat personas of the local agent (JSON array)"),
  addRuntimeOptions,
  addHeartbeatOptions,
).action((flags: AppServerFlags & YeaftFlags) => yeaftServe(flags, true, true));
yeaft
  .command("user")
  .description("Yeaft users")
  .command("add <name>")
  .description("Create a user (password from the terminal, or stdin when piped); prints the user's agent secret last.")
  .option("--data-dir <dir>", "Switchyard's data directory (env SWITCHYARD_HOME)")
  .option("--store <url>", "the PostgreSQL database a cluster's relays share (env SWITCHYARD_DATABASE_URL)")
  .action(async (name: string, flags: { dataDir?: string; store?: string }) => {
    const { addUser } = await import("./yeaft-users.js");
    const storeUrl = flags.store ?? process.env.SWITCHYARD_DATABASE_URL;
    process.exitCode = await addUser(name, path.join(resolveDataDir(flags, process.env), "yeaft"), storeUrl || undefined);
  });

program
  .command("hub")
  .description("Run the Hub: finds or starts each workspace's app server for clients (loopback HTTP, found through hub.lock).")
  .option("--data-dir <dir>", "Switchyard's data directory, where hub.lock is written (env SWITCHYARD_HOME)")
  .option("--idle-timeout-ms <n>", "stop a workspace server after this long with no client (default 600000)", argument(positiveInt))
  .action(async (flags: { dataDir?: string; idleTimeoutMs?: number }) => {
    const { runHub } = await import("../hub/run.js");
    await runHub({ dataDir: resolveDataDir(flags, process.env), idleTimeoutMs: flags.idleTimeoutMs ?? 600_000 });
  });

program
  .command("doctor")
  .description("Explain which provider and model app-server would use, and check the configuration, data directory, store and provider.")
  .option("--data-dir <dir>", "data directory to check (env SWITCHYARD_HOME, default ~/.switchyard)")
  .option("--provider <name>", "check this provider instead of the configured one")
  .option("--model <name>", "check this model instead of the configured one")
  .option("--backend <backend>", "check this backend instead of the configured one")
  .option("--store <url>", "check this PostgreSQL store instead of the data directory's database (env SWITCHYARD_DATABASE_URL)")
  .action(async (flags: DoctorFlags) => {
    const { runDoctor } = await import("./doctor.js");
    process.exitCode = await runDoctor(flags, process.env, (line) => process.stdout.write(`${line}\n`));
  });

program
  .command("db")
  .description("Manage the PostgreSQL store.")
  .command("migrate")
  .description("Bring the PostgreSQL store's schema to this version of Switchyard (refuses a newer one).")
  .option("--store <url>", "the database, postgres://… (env SWITCHYARD_DATABASE_URL)")
  .action(async (flags: { store?: string }) => {
    const { runDbMigrate } = await import("./db.js");
    process.exitCode = await runDbMigrate(flags.store ?? process.env.SWITCHYARD_DATABASE_URL, (line) => process.stdout.write(`${line}\n`));
  });

program
  .command("cluster")
  .description("See the Switchyard nodes that share a PostgreSQL store.")
  .command("status")
  .description("List the nodes on the database: alive or not, heartbeat age, threads owned, turns running.")
  .option("--store <url>", "the database, postgres://… (env SWITCHYARD_DATABASE_URL)")
  .option("--json", "print JSON")
  .action(async (flags: { store?: string; json?: boolean }) => {
    const { runClusterStatus } = await import("./db.js");
    process.exitCode = await runClusterStatus(flags.store ?? process.env.SWITCHYARD_DATABASE_URL, flags, (line) =>
      process.stdout.write(`${line}\n`),
    );
  });

program
  .command("schema")
  .description("Write every face's protocol as JSON Schema and TypeScript declarations, and with --docs its reference page.")
  .requiredOption("--out <dir>", "writes <dir>/<face>/<face>.schema.json and <dir>/<face>/<face>.d.ts")
  .option("--docs <dir>", "also writes the reference pages, <dir>/<face>.md")
  .action(async (flags: { out: string; docs?: string }) => {
    const { runSchema } = await import("./schema.js");
    process.exitCode = await runSchema(flags, (line) => process.stdout.write(`${line}\n`));
  });

/** Parses the command line and runs the command. */
export async function runProgram(): Promise<void> {
  // `switchyard help <command>` prints a command's help without running the hook that adds them.
  if (process.argv.includes("help")) for (const command of [...optionSets.keys()]) addOptionSets(program, command);
  await program.parseAsync();
}
