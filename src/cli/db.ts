// `switchyard db migrate`: brings a PostgreSQL store's schema to this binary's version.
import { postgresPool, migratePostgres } from "../store/postgres-store.js";

export async function runDbMigrate(url: string | undefined, print: (line: string) => void): Promise<number> {
  if (!url || !/^postgres(ql)?:\/\//.test(url)) {
    print("switchyard db migrate: give the database as --store postgres://… (or SWITCHYARD_DATABASE_URL).");
    return 1;
  }
  const pool = await postgresPool(url);
  try {
    print(`schema version ${await migratePostgres(pool)}: up to date`);
    return 0;
  } catch (error) {
    print(`switchyard db migrate: ${error instanceof Error ? error.message : String(error)}`);
    return 1;
  } finally {
    await pool.end();
  }
}
