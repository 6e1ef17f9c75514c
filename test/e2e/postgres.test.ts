// The server on a PostgreSQL store: a thread started and run by one server is read, resumed and
// continued by another with a different data directory (the history is in the database); a
// turn cut by kill -9 is failed at the next start; a database that cannot be opened is a clear
// error and exit 1.
import assert from "node:assert/strict";
import os from "node:os";
import { after, afterEach, before, describe, it } from "node:test";
import { spawnSync } from "node:child_process";
import { CLI_PATH, runCli, tempDir } from "../support/server-process.js";
import { loggedSeqs, postgresMissing, TestPostgres } from "../support/postgres.js";
import { POSTGRES_SCHEMA_VERSION, postgresPool } from "../../src/store/postgres-schema.js";
import { itemsOf, ModelScript, startTypedHarness } from "../support/typed-harness.js";
import { eventually } from "../support/agentcraft.js";
import type { RpcError } from "../../src/client/index.js";
import { fetchOrSayWhy } from "../support/fetch.js";

describe("app-server --store postgres://", { skip: postgresMissing() }, () => {
  let model: ModelScript;
  let server: TestPostgres;
  let databases = 0;
  before(async () => {
    model = await ModelScript.start();
    server = await TestPostgres.start();
  });
  /** Runs the CLI to its end, its stdin empty. */
  afterEach(() => model.assertConsumed());
  after(async () => {
    server?.stop();
    await model?.fake.close();
  });

  it("keeps the history in the database: another server, with another data directory, reads and continues it", async () => {
    const url = server.createDatabase(`e2e${++databases}`);
    const first = await startTypedHarness({ model, args: ["--store", url] });
    let threadId: string;
    try {
      model.enqueue({ kind: "response", text: "remembered answer" });
      threadId = await first.startThread({ displayName: "In PostgreSQL" });
      await first.runTurn(threadId, "remember this");
    } finally {
      await first.close();
    }

    const second = await startTypedHarness({ model, args: ["--store", url] });
    try {
      assert.notEqual(second.dataDir, first.dataDir);
      const listed = (await second.client.request("thread/list", {})).data.find((t) => t.id === threadId);
      assert.equal(listed?.displayName, "In PostgreSQL");
      const resumed = (await second.client.request("thread/resume", { threadId })).thread;
      assert.equal(itemsOf(resumed.turns![0]!.items!, "agentMessage")[0]!.payload.text, "remembered answer");
      model.enqueue({ kind: "response", text: "second" });
      await second.runTurn(threadId, "and now?");
      const read = (await second.client.readThread(threadId)).thread;
      assert.deepEqual(
        read.turns?.map((t) => t.status),
        ["completed", "completed"],
      );
    } finally {
      await second.close();
    }
  });

  it("rides out a database restart mid-turn: the turn completes, every committed event reaches the client once", async () => {
    const url = server.createDatabase(`e2e${++databases}`);
    const h = await startTypedHarness({ model, args: ["--store", url] });
    try {
      const threadId = await h.startThread();
      const seqs: number[] = [];
      h.client.onEvent((event) => {
        const params = (event as { params?: { threadId?: unknown; seq?: unknown } }).params;
        if (params?.threadId === threadId && typeof params.seq === "number") seqs.push(params.seq);
      });
      const text = Array.from({ length: 300 }, (_, i) => `r${i} `);
      model.enqueue({ kind: "response", text, chunkDelayMs: 10 });
      const turnId = await h.startTurn(threadId, "stream through a restart");
      await h.client.waitFor("item/agentMessage/delta", (p) => p.delta === text[20], 10_000);
      await server.restart();
      const end = await h.client.turnEnd(turnId, 60_000);
      assert.equal(end.method, "turn/completed");

      const pool = await postgresPool(url);
      const logged = await loggedSeqs(pool, threadId);
      await pool.end();
      assert.deepEqual(
        logged,
        logged.map((_, i) => i + 1),
      );
      for (let i = 1; i < seqs.length; i++) assert.ok(seqs[i]! > seqs[i - 1]!, "in order, once each");
      assert.deepEqual(
        seqs.filter((seq) => !logged.includes(seq)),
        [],
        "nothing reported that was not committed",
      );
      const read = (await h.client.readThread(threadId)).thread;
      assert.equal(itemsOf(read.turns![0]!.items!, "agentMessage")[0]!.payload.text, text.join(""));
      assert.match(h.serverLog(), /The database cannot be written/, "the outage was seen (and ridden out)");
    } finally {
      await h.close();
    }
  });

  it("answers reads while the database is down with the retryable storageUnavailable, and serves them again once it is back", async () => {
    const url = server.createDatabase(`e2e${++databases}`);
    const h = await startTypedHarness({ model, args: ["--store", url, "--listen", "stdio://", "--listen", "ws://127.0.0.1:0"] });
    try {
      const threadId = await h.startThread({ displayName: "kept" });
      const statuses: string[] = [];
      h.client.onEvent((event) => {
        if (event.method === "server/statusChanged") statuses.push((event.params as { status: string }).status);
      });
      const readyz = new URL("/readyz", (await h.websocketUrl()).replace(/^ws/, "http"));
      const probe = async (): Promise<number> => (await fetchOrSayWhy(readyz)).status;
      assert.equal(await probe(), 200);
      await server.down();
      try {
        // Nothing is written meanwhile: the node's beat finds the database gone.
        await eventually(
          async () => (statuses.includes("storageUnavailable") ? true : undefined),
          "server/statusChanged storageUnavailable",
        );
        assert.equal(await probe(), 503, "a load balancer takes the node out");
        for (const request of [() => h.client.readThread(threadId), () => h.client.request("thread/list", {})]) {
          await assert.rejects(request(), (error: RpcError) => {
            assert.equal(error.code, -32030);
            assert.match(error.message, /database cannot be reached/);
            return true;
          });
        }
      } finally {
        await server.up();
      }
      const read = await eventually(
        async () => (await h.client.readThread(threadId).catch(() => undefined))?.thread,
        "a read after the database is back",
      );
      assert.equal(read.displayName, "kept");
      await eventually(async () => (statuses.at(-1) === "ok" ? true : undefined), "server/statusChanged ok");
      assert.deepEqual(statuses, ["storageUnavailable", "ok"]);
      assert.equal(await probe(), 200);
    } finally {
      await h.close();
    }
  });

  it("db migrate brings a database to this version; it and the server refuse a newer schema", async () => {
    const url = server.createDatabase(`e2e${++databases}`);
    const migrated = runCli("db", "migrate", "--store", url);
    assert.equal(migrated.status, 0, migrated.stdout + migrated.stderr);
    assert.match(migrated.stdout, new RegExp(`schema version 0 → ${POSTGRES_SCHEMA_VERSION}: migrated`));
    const again = runCli("db", "migrate", "--store", url);
    assert.match(again.stdout, new RegExp(`schema version ${POSTGRES_SCHEMA_VERSION}: already up to date`));
    const pool = await postgresPool(url);
    await pool.query("UPDATE switchyard_schema SET version = version + 1");
    await pool.end();
    const refused = runCli("db", "migrate", "--store", url);
    assert.equal(refused.status, 1);
    assert.match(refused.stdout, /newer than this Switchyard supports/);
    assert.match(refused.stdout, new RegExp(`the database at ${url.replace(/[.?]/g, "\\$&")}`), "it names the database");
    const serve = runCli("app-server", "--data-dir", tempDir("data"), "--store", url);
    assert.equal(serve.status, 1);
    assert.match(serve.stderr, /newer than this Switchyard supports/);
  });

  it("cluster status tells a database no server used from one whose servers all stopped", () => {
    const url = server.createDatabase(`e2e${++databases}`);
    runCli("db", "migrate", "--store", url);
    assert.match(runCli("cluster", "status", "--store", url).stdout, /^No nodes: no Switchyard server has used this database yet\.$/m);
    // Its stdin ends at once: the server starts, joins the cluster and stops.
    const served = runCli("app-server", "--data-dir", tempDir("data"), "--store", url);
    assert.equal(served.status, 0, served.stderr);
    assert.match(
      runCli("cluster", "status", "--store", url).stdout,
      /^No nodes running: the one server that used this database has stopped and holds no threads\.$/m,
    );
  });

  it("says what holds the feed back: a node's log and cluster status name the open transaction, and the log its end", async () => {
    const url = server.createDatabase(`e2e${++databases}`);
    const h = await startTypedHarness({ model, args: ["--store", url] });
    const pool = await postgresPool(url);
    const holder = await pool.connect();
    try {
      await holder.query("SET application_name = 'nightly-report'");
      await holder.query("BEGIN");
      const { rows } = await holder.query<{ xid: string }>("SELECT pg_current_xact_id()::text AS xid");
      await h.startThread(); // committed after the transaction began: it waits behind it
      const named = new RegExp(
        `transaction ${rows[0]!.xid} \\(pid \\d+, user postgres, database e2e\\d+, application nightly-report, idle in transaction, open \\d+\\.\\d s\\)`,
      );
      await eventually(async () => (/The event feed is held back/.test(h.serverLog()) ? true : undefined), "the node's warning");
      assert.match(h.serverLog(), named);
      const status = runCli("cluster", "status", "--store", url);
      assert.match(status.stdout, /^The event feed is held back by transaction/m);
      assert.match(status.stdout, named);
      const doctor = runCli("doctor", "--data-dir", tempDir("data"), "--store", url);
      assert.match(doctor.stdout, /event feed +held back by transaction/);
      assert.match(doctor.stdout, named);
      await holder.query("COMMIT");
      await eventually(async () => (/The event feed moves again/.test(h.serverLog()) ? true : undefined), "the node saying it moves again");
      assert.doesNotMatch(runCli("cluster", "status", "--store", url).stdout, /held back/);
      // The node's own connections say whose they are, for the day one of them is the holder.
      const serverPid = /"pid":(\d+)/.exec(h.serverLog())![1];
      const { rows: names } = await pool.query<{ name: string }>(
        "SELECT DISTINCT application_name AS name FROM pg_stat_activity WHERE datname = current_database()",
      );
      assert.ok(
        names.some((row) => row.name === `switchyard ${os.hostname()}:${serverPid}`),
        JSON.stringify(names),
      );
    } finally {
      holder.release();
      await pool.end();
      await h.close();
    }
  });

  it("warns when the database password is on the command line, without saying it", async () => {
    const url = new URL(server.createDatabase(`e2e${++databases}`));
    url.password = "seen-in-ps"; // the test database trusts local connections: it is never asked for
    const h = await startTypedHarness({ model, args: ["--store", url.href] });
    try {
      assert.match(h.serverLog(), /The database password is on the command line \(--store\).*SWITCHYARD_DATABASE_URL/);
      assert.doesNotMatch(h.serverLog(), /seen-in-ps/);
    } finally {
      await h.close();
    }
  });

  it("doctor checks the PostgreSQL store: no schema yet, this version's, a newer one, none reachable", async () => {
    const url = server.createDatabase(`e2e${++databases}`);
    const databaseLine = (store: string): string => {
      const run = runCli("doctor", "--data-dir", tempDir("data"), "--store", store);
      return run.stdout.split("\n").find((line) => line.includes("database")) ?? run.stdout + run.stderr;
    };
    assert.match(databaseLine(url), /^ {6}database +\S+ answers; it has no Switchyard schema yet/);
    runCli("db", "migrate", "--store", url);
    assert.match(
      databaseLine(url),
      new RegExp(`^OK {4}database +\\S+ opens, schema version ${POSTGRES_SCHEMA_VERSION} \\(0 threads; 0 nodes running\\)`),
    );
    const pool = await postgresPool(url);
    await pool.query("UPDATE switchyard_schema SET version = version + 1");
    await pool.end();
    assert.match(databaseLine(url), /^FAIL {2}database +\S+ has schema version \d+, newer than this Switchyard's/);
    assert.match(
      databaseLine("postgres://nobody:secret@127.0.0.1:1/none"),
      /^FAIL {2}database +postgres:\/\/nobody:\*\*\*@127\.0\.0\.1:1\/none cannot be used/,
    );
  });

  it("exits 1 with a clear message when the database cannot be opened", () => {
    const run = spawnSync(
      process.execPath,
      [CLI_PATH, "app-server", "--data-dir", tempDir("data"), "--store", "postgres://nobody:secret@127.0.0.1:1/none"],
      {
        input: `${JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { clientInfo: { name: "t", version: "1" } } })}\n`,
        encoding: "utf8",
        timeout: 20_000,
      },
    );
    assert.equal(run.status, 1);
    assert.match(run.stderr, /Cannot open the PostgreSQL store at postgres:\/\/nobody:\*\*\*@127\.0\.0\.1:1\/none/);
    assert.equal(run.stdout, "", "its initialize was not answered");
  });
});
