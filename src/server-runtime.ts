// The runtime side of a server: providers, store, tools, backends and the runtime, recovered
// from the event log. Loaded after a stdio client's initialize has been answered (see
// server.ts): it is most of what start-up loads (zod, SQLite, the protocol tables).
import path from "node:path";
import { fileURLToPath } from "node:url";
import { Backends, DEFAULT_AGENT_IDLE_TIMEOUT_MS } from "./backends/index.js";
import { setUpProviders, type ProviderSetup } from "./config/providers.js";
import type { Logger } from "./log.js";
import { Runtime } from "./runtime/runtime.js";
import type { ServerConfig } from "./server.js";
import { openStore } from "./store/sqlite-store.js";
import type { Store } from "./store/store.js";
import { createDefaultRegistry } from "./tools/registry.js";
import { loadSkillTool } from "./tools/load-skill.js";
import { schedulePromptTool } from "./automation/schedule-prompt.js";
import { runSubagentTool } from "./automation/run-subagent.js";
import { WorkspaceResources } from "./workspace/index.js";
import { startHeapGovernor } from "./heap-governor.js";

/** The system skills, `skills/` of the package: two levels up from dist/src and from dist/chunks. */
const BUILTIN_SKILLS_DIR = fileURLToPath(new URL("../../skills", import.meta.url));

export interface AssembledRuntime {
  runtime: Runtime;
  store: Store;
  /** Loads what the first turn needs; called once a request has been answered. Idempotent. */
  prepareFirstTurn(): void;
}

/**
 * `store`: one already open (PostgreSQL), else the data directory's SQLite store; `providers`:
 * the setup answers given before the runtime was up used, else a new one.
 */
export async function assembleRuntime(
  config: ServerConfig,
  log: Logger,
  parts: { store?: Store; providers?: ProviderSetup } = {},
): Promise<AssembledRuntime> {
  const store = parts.store ?? openStore(config.dataDir);
  const providers = parts.providers ?? setUpProviders(config, log);
  const workspace = new WorkspaceResources({
    builtinSkillsDir: BUILTIN_SKILLS_DIR,
    configDir: config.dataDir,
    env: config.env,
    ...(Number(config.env.SWITCHYARD_MCP_RESTART_DELAY_MS) > 0
      ? { mcpRestartDelayMs: Number(config.env.SWITCHYARD_MCP_RESTART_DELAY_MS) }
      : {}),
  });
  // schedule_prompt and run_subagent reach the runtime, made below with these tools.
  let runtimeRef: Runtime | undefined;
  const tools = createDefaultRegistry([
    loadSkillTool(workspace.skills),
    schedulePromptTool(() => runtimeRef!.automation.cron),
    runSubagentTool(() => ({
      runtime: runtimeRef!,
      definition: (workspacePath, profile) => workspace.subagents.definition(workspacePath, profile),
    })),
  ]);
  const backends = new Backends(
    {
      tools,
      resolveProvider: providers.resolveProvider,
      defaults: { ...providers.defaults, commandTimeoutMs: config.commandTimeoutMs },
      workspace,
    },
    {
      log,
      env: config.env,
      agentRegistryDir: path.join(config.dataDir, "agents"),
      idleTimeoutMs: config.agentIdleTimeoutMs ?? DEFAULT_AGENT_IDLE_TIMEOUT_MS,
    },
    config.backend,
  );
  backends.reapOrphans();
  const heap = startHeapGovernor(() => runtimeRef?.runningTurns() ?? 0);
  const runtime = new Runtime({
    store,
    backends,
    tools,
    models: providers.catalog,
    logger: log,
    workspace,
    cronFile: path.join(config.dataDir, "cron", "jobs.json"),
    env: config.env,
    ...(config.workspaceRoots ? { workspaceRoots: config.workspaceRoots } : {}),
    ...(config.failover ? { failover: config.failover } : {}),
    ...(config.maxRunningTurns ? { maxRunningTurns: config.maxRunningTurns } : {}),
    defaults: {
      backend: config.backend ?? { type: "builtin" },
      ...(providers.defaults.model ? { model: providers.defaults.model } : {}),
      approvalTimeoutMs: config.approvalTimeoutMs,
      ...(config.storageTimeoutMs ? { storageTimeoutMs: config.storageTimeoutMs } : {}),
    },
  });
  runtimeRef = runtime;
  const recovered = await runtime.recover();
  runtime.automation.heartbeat.startFromSettings(process.cwd());
  await runtime.automation.cron.syncFromSettings(process.cwd());
  runtime.automation.channels.start(process.cwd(), workspace.changes);
  if (recovered > 0) log.warn({ turns: recovered }, "marked turns interrupted by the previous shutdown as failed");

  // What the first turn needs (the tool specs, the skill catalog, the default provider's SDK and
  // client, its streaming path run once in memory: providers/warm-up.ts) is prepared once the
  // first request (initialize) has been answered: off the start-up path, and usually done before
  // the client's first turn/start; a turn that comes sooner waits for the same load, not a second.
  let preparing = false;
  const prepareFirstTurn = (): void => {
    if (preparing) return;
    preparing = true;
    if (config.backend && config.backend.type !== "builtin") return heap.startupDone();
    setImmediate(() => {
      tools.specs();
      // The skill catalog goes into the first prompt.
      try {
        workspace.skills.catalog(process.cwd());
      } catch (error) {
        log.debug({ err: error }, "could not read the skill catalog");
      }
      providers
        .prepare()
        .catch((error: unknown) => log.debug({ err: error }, "could not prepare the default provider"))
        .finally(() => {
          heap.startupDone();
          // Then the garbage all that left (about 10 ms), or V8's first full collection falls in
          // the first turn; one that started meanwhile is not held up for it.
          heap.collectUnlessBusy();
          log.info({ preparedMs: Math.round(performance.now()), turnsRunning: runtime.runningTurns() }, "first turn prepared");
        });
    });
  };
  return { runtime, store, prepareFirstTurn };
}
