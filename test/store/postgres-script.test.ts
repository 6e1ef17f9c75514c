// A script's literals must reach PostgreSQL as exactly the values a parameterised query sends.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import pg from "pg";
import { script, text } from "../../src/store/postgres-script.js";
import { postgresMissing, TestPostgres } from "../support/postgres.js";

const STRINGS = [
  "",
  "plain",
  `{"itemId":"item_1","delta":"it's \\"quoted\\" \\\\ back\\\\slashed"}`,
  "'; DROP TABLE t; --",
  "$",
  "$$",
  "$s$",
  "ends with $s",
  "ends with $",
  "$s0$ and $s$ and $s1",
  "line\nbreak\ttab é ✓ 🚀",
  "E'\\x41'",
  "NULL",
  `"{a,b}"`,
  "\u0001 control \u001f",
];

describe("script literals", { skip: postgresMissing() }, () => {
  let server: TestPostgres;
  let client: pg.Client;
  before(async () => {
    server = await TestPostgres.start();
    client = new pg.Client({ connectionString: server.createDatabase("literals") });
    await client.connect();
  });
  after(async () => {
    await client?.end();
    await server?.stop();
  });

  it("reads back every string as a parameter would give it", async () => {
    for (const value of STRINGS) {
      const { rows } = await client.query<{ v: string }>(script([{ text: "SELECT $1::text AS v", values: [value] }]));
      assert.equal(rows[0]!.v, value, `literal ${text(value)}`);
    }
  });

  it("reads back arrays of text, numbers and nulls, empty ones included", async () => {
    const cases: Array<[string, unknown[]]> = [
      ["text[]", STRINGS],
      ["text[]", ["a", null, "b"]],
      ["text[]", [null]],
      ["text[]", []],
      ["bigint[]", [1, 2, 3_000_000_000]],
      ["bigint[]", [null, 7]],
      ["bigint[]", []],
    ];
    for (const [type, values] of cases) {
      const sql = `SELECT $1::${type} AS v`;
      const { rows } = await client.query<{ v: unknown[] }>(script([{ text: sql, values: [values] }]));
      const expected = (await client.query<{ v: unknown[] }>(sql, [values])).rows[0]!.v;
      assert.deepEqual(rows[0]!.v, expected, `${type} ${JSON.stringify(values)}`);
    }
  });

  it("runs several statements as one script", async () => {
    const results = (await client.query(
      script([
        { text: "CREATE TEMP TABLE t (a text, b bigint)", values: [] },
        {
          text: "INSERT INTO t SELECT * FROM unnest($1::text[], $2::bigint[])",
          values: [
            ["x$s$", "y"],
            [1, 2],
          ],
        },
        { text: "SELECT a, b FROM t ORDER BY b", values: [] },
      ]),
    )) as unknown as pg.QueryResult[];
    assert.deepEqual(results.at(-1)!.rows, [
      { a: "x$s$", b: "1" },
      { a: "y", b: "2" },
    ]);
  });
});
