// `switchyard doctor`: explains which provider and model the server would use and why, and
// checks the configuration file, the data directory, the database and the provider's API.
import Database from "better-sqlite3";
import fs from "node:fs";
import path from "node:path";
import { ConfigFileError, displayPath, loadConfigFile, type LoadedConfigFile } from "../config/file.js";
import { detectDefault, providerEnv } from "../config/providers.js";
import { listLiveModels, offersModel } from "../providers/model-listing.js";
import { createProvider } from "../providers/select.js";
import { DB_FILE } from "../store/sqlite-store.js";
import { describeDatabase } from "../store/postgres-url.js";
import { chooseProviderAndModel, resolveDataDir, resolveStoreUrl, type Chosen } from "./config.js";
import { probeBackends } from "../backends/index.js";
import { parseBackendFlag } from "../domain/backend-spec.js";
import type { BackendSpec } from "../domain/model.js";
import { silentLogger } from "../log.js";

export interface DoctorFlags {
  dataDir?: string;
  provider?: string;
  model?: string;
  backend?: string;
  /** A PostgreSQL store to check instead of the data directory's SQLite database. */
  store?: string;
}

type Status = "ok" | "problem" | "info";

/** Runs every check, prints the report, and returns the exit code (0 when all is well). */
export async function runDoctor(flags: DoctorFlags, env: NodeJS.ProcessEnv, out: (line: string) => void): Promise<number> {
  let problems = 0;
  const report = (label: string, status: Status, text: string): void => {
    if (status === "problem") problems++;
    const mark = status === "ok" ? "OK  " : status === "problem" ? "FAIL" : "    ";
    // Continuation lines line up under the first line's text.
    out(`${mark}  ${label.padEnd(12)} ${text.split("\n").join(`\n${" ".repeat(19)}`)}`);
  };

  const dataDir = resolveDataDir(flags, env);
  const file = await checkConfigFile(dataDir, report);
  checkDataDir(dataDir, report);
  await checkStore(flags, env, dataDir, report);
  await checkBackends(flags, env, file, dataDir, report);

  // Provider and model, chosen exactly as app-server chooses them.
  const settings = file.config.providers;
  const chosen = chooseProviderAndModel(flags, env, file);
  let provider = chosen.provider?.value;
  let model = chosen.model?.value;
  let providerWhy = chosen.provider ? why(chosen.provider) : "";
  let modelWhy = chosen.model ? why(chosen.model) : "";
  if (!provider) {
    const detected = await detectDefault(env, settings);
    if (detected) {
      provider = detected.provider;
      providerWhy = "auto-detected, since no flag, variable or config file names a provider";
      if (!model && detected.model) [model, modelWhy] = [detected.model, "auto-detected with the provider"];
    }
  }
  const built = await createProvider({
    ...(provider ? { provider } : {}),
    ...(model ? { model } : {}),
    env: providerEnv(env, settings, provider),
  });
  if ("problem" in built) {
    report("provider", "problem", built.problem);
    report("live check", "info", "skipped: there is no usable provider");
    return finish(problems, out);
  }
  report("provider", "info", `${built.name} (${providerWhy || "picked from the API keys and endpoints that are set"})`);
  model ??= built.defaultModel;
  report("model", "info", `${model} (${modelWhy || "the provider's default"})`);

  const listing = await listLiveModels(built.name, providerEnv(env, settings, built.name));
  if (!listing) report("live check", "info", `the ${built.name} provider has no models endpoint to ask`);
  else if (!listing.ok) report("live check", "problem", listing.problem);
  else if (!offersModel(listing.models, model)) {
    const available =
      listing.models
        .map((m) => m.id)
        .slice(0, 20)
        .join(", ") || "none";
    report("live check", "problem", `model ${model} is not offered by this provider; available: ${available}`);
  } else report("live check", "ok", `${listing.url} answered and offers ${model}`);
  return finish(problems, out);
}

/** The default backend must be available; the others are listed for information. */
async function checkBackends(
  flags: DoctorFlags,
  env: NodeJS.ProcessEnv,
  file: LoadedConfigFile,
  dataDir: string,
  report: Report,
): Promise<void> {
  let spec: BackendSpec;
  try {
    const flag = flags.backend ?? env.SWITCHYARD_BACKEND;
    spec = flag ? parseBackendFlag(flag) : (file.config.backend ?? { type: "builtin" });
  } catch (error) {
    report("backend", "problem", (error as Error).message);
    return;
  }
  const found = await probeBackends(spec, { log: silentLogger, env, agentRegistryDir: path.join(dataDir, "agents"), idleTimeoutMs: 0 });
  for (const backend of found) {
    const isDefault = backend.type === spec.type;
    const what = [backend.command, backend.version].filter(Boolean).join(", ");
    const text = `${backend.type}${isDefault ? " (default)" : ""}: ${backend.available ? `available${what ? ` (${what})` : ""}` : `unavailable: ${backend.problem ?? "unknown reason"}`}`;
    report("backend", backend.available ? (isDefault ? "ok" : "info") : isDefault ? "problem" : "info", text);
  }
}

function why(chosen: Chosen): string {
  if (chosen.source === "flag") return `from the ${chosen.origin} flag`;
  if (chosen.source === "environment") return `from the ${chosen.origin} environment variable`;
  return `from ${chosen.origin}`;
}

function finish(problems: number, out: (line: string) => void): number {
  out(problems === 0 ? "\nEverything looks fine." : `\n${problems} problem${problems === 1 ? "" : "s"} found.`);
  return problems === 0 ? 0 : 1;
}

type Report = (label: string, status: Status, text: string) => void;

async function checkConfigFile(dataDir: string, report: Report): Promise<LoadedConfigFile> {
  try {
    const file = await loadConfigFile(dataDir);
    if (file.exists) report("config file", "ok", displayPath(file.path));
    else report("config file", "info", `${displayPath(file.path)} does not exist; built-in defaults apply`);
    return file;
  } catch (error) {
    if (!(error instanceof ConfigFileError)) throw error;
    // The rest of the checks go on as if the file were empty; app-server would refuse to start.
    report("config file", "problem", `${error.message}\n(app-server will not start until this is fixed)`);
    return { path: path.join(dataDir, "config.json"), exists: false, config: {} };
  }
}

function checkDataDir(dataDir: string, report: Report): void {
  const shown = displayPath(dataDir);
  if (!fs.existsSync(dataDir)) {
    // Not created here: doctor only looks. The server creates it on first start.
    let parent = path.dirname(dataDir);
    while (!fs.existsSync(parent) && parent !== path.dirname(parent)) parent = path.dirname(parent);
    try {
      fs.accessSync(parent, fs.constants.W_OK);
      report("data dir", "ok", `${shown} does not exist yet; it will be created on first start`);
    } catch {
      report("data dir", "problem", `${shown} does not exist and cannot be created: ${displayPath(parent)} is not writable`);
    }
    return;
  }
  const probe = path.join(dataDir, `.doctor-${process.pid}`);
  try {
    fs.writeFileSync(probe, "");
    fs.rmSync(probe);
    report("data dir", "ok", `${shown} is writable`);
  } catch (error) {
    report("data dir", "problem", `${shown} is not writable (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`);
  }
  checkFreeSpace(dataDir, report);
}

/** Below this, a long turn can fill the disk (the server then holds writes; see docs/reliability.md). */
const LOW_SPACE_BYTES = 100 * 1024 * 1024;

function checkFreeSpace(dataDir: string, report: Report): void {
  const { bavail, bsize } = fs.statfsSync(dataDir);
  const free = bavail * bsize;
  const shown = free >= 1024 ** 3 ? `${(free / 1024 ** 3).toFixed(1)} GiB` : `${(free / 1024 ** 2).toFixed(1)} MiB`;
  if (free < LOW_SPACE_BYTES) report("disk space", "problem", `only ${shown} free for the data directory`);
  else report("disk space", "ok", `${shown} free`);
}

function checkDatabase(dataDir: string, report: Report): void {
  const file = path.join(dataDir, DB_FILE);
  if (!fs.existsSync(file)) {
    report("database", "info", `${displayPath(file)} does not exist yet; it will be created on first start`);
    return;
  }
  // Read-only, without the server's lock: doctor may run next to a running server.
  let db: Database.Database | undefined;
  try {
    db = new Database(file, { readonly: true, fileMustExist: true });
    const threads = db.prepare<[], number>("SELECT count(*) FROM threads").pluck().get() ?? 0;
    report("database", "ok", `${displayPath(file)} opens (${plural(threads, "thread")})`);
  } catch (error) {
    report("database", "problem", `${displayPath(file)} cannot be read: ${(error as Error).message}`);
  } finally {
    db?.close();
  }
}

/** The store app-server would use, chosen as it chooses: a PostgreSQL database, else the data directory's SQLite file. */
async function checkStore(flags: DoctorFlags, env: NodeJS.ProcessEnv, dataDir: string, report: Report): Promise<void> {
  let url: string | undefined;
  try {
    url = resolveStoreUrl(flags, env);
  } catch (error) {
    report("database", "problem", (error as Error).message);
    return;
  }
  if (url) await checkPostgres(url, report);
  else checkDatabase(dataDir, report);
}

/** A PostgreSQL store: reachable, its schema version against this binary's, what it holds. */
async function checkPostgres(url: string, report: Report): Promise<void> {
  const { postgresPool, POSTGRES_SCHEMA_VERSION } = await import("../store/postgres-schema.js");
  const { DEFAULT_LEASE_TTL_MS, nodeAlive } = await import("../store/postgres-node.js");
  const where = describeDatabase(url);
  const pool = await postgresPool(url);
  try {
    const { rows } = await pool.query<{ exists: boolean }>("SELECT to_regclass('switchyard_schema') IS NOT NULL AS exists");
    const version = rows[0]?.exists
      ? ((await pool.query<{ version: number }>("SELECT version FROM switchyard_schema")).rows[0]?.version ?? null)
      : null;
    if (version === null) {
      report(
        "database",
        "info",
        `${where} answers; it has no Switchyard schema yet: the first server creates it (or \`switchyard db migrate\`)`,
      );
    } else if (version > POSTGRES_SCHEMA_VERSION) {
      report(
        "database",
        "problem",
        `${where} has schema version ${version}, newer than this Switchyard's ${POSTGRES_SCHEMA_VERSION}: it refuses to start on it`,
      );
    } else if (version < POSTGRES_SCHEMA_VERSION) {
      report(
        "database",
        "info",
        `${where} has schema version ${version}, older than this Switchyard's ${POSTGRES_SCHEMA_VERSION}: a server migrates it on start (stop the older nodes first; see docs/cluster.md)`,
      );
    } else {
      const { rows: counts } = await pool.query<{ threads: number; alive: number }>(
        `SELECT (SELECT count(*) FROM threads)::int AS threads,
                (SELECT count(*) FROM nodes n WHERE ${nodeAlive("n.num", DEFAULT_LEASE_TTL_MS)})::int AS alive`,
      );
      const { threads = 0, alive = 0 } = counts[0] ?? {};
      report(
        "database",
        "ok",
        `${where} opens, schema version ${version} (${plural(threads, "thread")}; ${plural(alive, "node")} running)`,
      );
      const { describeFeedHolder, HELD_BACK, lastingFeedHolder } = await import("../store/feed-holder.js");
      const holder = await lastingFeedHolder(pool);
      if (holder) report("event feed", "problem", `held back by ${describeFeedHolder(holder)}: ${HELD_BACK}`);
    }
  } catch (error) {
    report("database", "problem", `${where} cannot be used: ${(error as Error).message}`);
  } finally {
    await pool.end();
  }
}

function plural(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? "" : "s"}`;
}
