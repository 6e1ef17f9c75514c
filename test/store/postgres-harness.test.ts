// The tests' PostgreSQL starts in a temp dir, as an unprivileged user, and answers over `pg`.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import pg from "pg";
import { postgresMissing, TestPostgres } from "../support/postgres.js";

describe("test PostgreSQL", { skip: postgresMissing() }, () => {
  let server: TestPostgres;
  before(async () => (server = await TestPostgres.start()));
  after(() => server?.stop());

  it("runs on loopback and serves a fresh database (PostgreSQL itself refuses to run as root)", async () => {
    const client = new pg.Client({ connectionString: server.createDatabase("smoke") });
    await client.connect();
    try {
      const { rows } = await client.query<{ version: string; user: string; addr: string }>(
        "SELECT current_setting('server_version') AS version, current_user AS user, inet_server_addr()::text AS addr",
      );
      assert.match(rows[0]!.version, /^\d+/);
      assert.equal(rows[0]!.addr, "127.0.0.1/32");
    } finally {
      await client.end();
    }
  });
});
