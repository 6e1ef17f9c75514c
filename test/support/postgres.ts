// A throwaway PostgreSQL server for tests: the system's PostgreSQL, initialized in a temp
// directory and listening on a free loopback port. PostgreSQL refuses to run as root, so under
// root it runs as the `postgres` user the system package created.
import { execFile, execFileSync, spawnSync } from "node:child_process";
import { promisify } from "node:util";
import { createHash } from "node:crypto";
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import type { Pool } from "pg";
import { freePort } from "./ports.js";

/** The directory of PostgreSQL's server programs, or undefined when none is installed. */
export function postgresBinDir(): string | undefined {
  const debian = "/usr/lib/postgresql";
  if (existsSync(debian)) {
    const newest = readdirSync(debian)
      .filter((v) => existsSync(path.join(debian, v, "bin", "initdb")))
      .sort((a, b) => Number(b) - Number(a))[0];
    if (newest) return path.join(debian, newest, "bin");
  }
  const found = spawnSync("sh", ["-c", "command -v initdb"], { encoding: "utf8" }).stdout.trim();
  return found ? path.dirname(found) : undefined;
}

/** Why the PostgreSQL tests cannot run here, or undefined when they can. */
export function postgresMissing(): string | undefined {
  if (!postgresBinDir()) return "no PostgreSQL installed (initdb not found)";
  if (process.getuid?.() === 0 && spawnSync("id", ["-u", "postgres"]).status !== 0) return "running as root with no postgres user";
  return undefined;
}

export class TestPostgres {
  private constructor(
    private readonly bin: string,
    private readonly dir: string,
    readonly port: number,
    private readonly asUser: string[],
  ) {}

  /** The server's superuser connection URL for a database (default: postgres). */
  url(database = "postgres"): string {
    return `postgres://postgres@127.0.0.1:${this.port}/${database}`;
  }

  static async start(): Promise<TestPostgres> {
    const bin = postgresBinDir();
    if (!bin) throw new Error("no PostgreSQL installed");
    const dir = mkdtempSync(path.join(os.tmpdir(), "switchyard-pg-"));
    const asUser: string[] = [];
    if (process.getuid?.() === 0) {
      const uid = Number(execFileSync("id", ["-u", "postgres"], { encoding: "utf8" }));
      const gid = Number(execFileSync("id", ["-g", "postgres"], { encoding: "utf8" }));
      chownSync(dir, uid, gid);
      asUser.push("runuser", "-u", "postgres", "--");
    }
    const pg = new TestPostgres(bin, dir, await freePort(), asUser);
    const data = path.join(dir, "data");
    pg.run("initdb", ["-D", data, "-U", "postgres", "--auth=trust", "--no-sync", "-E", "UTF8", "--locale=C"]);
    pg.run("pg_ctl", ["-D", data, "-l", path.join(dir, "log"), "-w", "-o", pg.options(), "start"]);
    return pg;
  }

  /** The server a test runner started (scripts/run-tests.mjs), on this port. */
  static attach(port: number): TestPostgres {
    const bin = postgresBinDir();
    if (!bin) throw new Error("no PostgreSQL installed");
    return new TestPostgres(bin, os.tmpdir(), port, process.getuid?.() === 0 ? ["runuser", "-u", "postgres", "--"] : []);
  }

  /** A new, empty database; returns its URL. */
  createDatabase(name: string): string {
    this.run("createdb", ["-h", "127.0.0.1", "-p", String(this.port), "-U", "postgres", name]);
    return this.url(name);
  }

  /**
   * Restarts the server as an administrator would (fast shutdown: sessions are cut, commits
   * kept). Asynchronous, so this process (a fake model, a client) goes on meanwhile.
   */
  restart(): Promise<void> {
    return this.pgCtl("restart");
  }

  /** Shuts the server down (fast) until `up`: the database is unreachable meanwhile. */
  down(): Promise<void> {
    return this.pgCtl("stop");
  }

  up(): Promise<void> {
    return this.pgCtl("start", ["-o", this.options()]);
  }

  private async pgCtl(action: string, more: string[] = []): Promise<void> {
    const [command, ...prefix] = [...this.asUser, path.join(this.bin, "pg_ctl")];
    const args = ["-D", path.join(this.dir, "data"), "-l", path.join(this.dir, "log"), "-m", "fast", "-w", ...more, action];
    await promisify(execFile)(command!, [...prefix, ...args], { cwd: this.dir });
  }

  private options(): string {
    // Prepared transactions: a test leaves one behind, as a crashed two-phase client does.
    return `-p ${this.port} -k ${this.dir} -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_prepared_transactions=4`;
  }

  stop(): void {
    this.run("pg_ctl", ["-D", path.join(this.dir, "data"), "-m", "immediate", "-w", "stop"]);
    rmSync(this.dir, { recursive: true, force: true });
  }

  private run(program: string, args: string[]): void {
    const [command, ...prefix] = [...this.asUser, path.join(this.bin, program)];
    const result = spawnSync(command!, [...prefix, ...args], { encoding: "utf8", cwd: this.dir });
    if (result.status !== 0) throw new Error(`${program} failed: ${result.stderr || result.stdout}`);
  }
}

/**
 * With SWITCHYARD_TEST_STORE=postgres (the runner then starts one server and gives its port),
 * every server a test spawns keeps its threads in PostgreSQL: one database per data directory,
 * so a restarted server finds its history as it would in the directory.
 */
export function testStoreEnv(dataDir: string): Record<string, string> {
  const port = process.env.SWITCHYARD_TEST_PG_PORT;
  if (process.env.SWITCHYARD_TEST_STORE !== "postgres" || !port) return {};
  const name = `d_${createHash("sha1").update(path.resolve(dataDir)).digest("hex").slice(0, 20)}`;
  const server = TestPostgres.attach(Number(port));
  if (!createdDatabases.has(name)) {
    try {
      server.createDatabase(name);
    } catch (error) {
      if (!/already exists/.test(String(error))) throw error;
    }
    createdDatabases.add(name);
  }
  return { SWITCHYARD_DATABASE_URL: server.url(name) };
}

const createdDatabases = new Set<string>();

/** A thread's seqs as the events table holds them, in order (a run of deltas counts each). */
export async function loggedSeqs(db: Pool, threadId: string): Promise<number[]> {
  const { rows } = await db.query<{ seq: number }>(
    "SELECT generate_series(seq, coalesce(last_seq, seq))::int AS seq FROM events WHERE thread_id = $1 ORDER BY 1",
    [threadId],
  );
  return rows.map((r) => r.seq);
}
