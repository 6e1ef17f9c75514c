// How a PostgreSQL error is told: a database that could not be reached (retryable) or one that
// refused a statement (a bug, or a conflict the caller handles).
import { RuntimeError } from "../domain/errors.js";

export function sqlStateOf(error: unknown): string | undefined {
  const code = (error as { code?: unknown }).code;
  return typeof code === "string" && /^[0-9A-Z]{5}$/.test(code) ? code : undefined;
}

/** Whether an error says the database could not be reached (rather than refusing a statement, or a bug). */
export function databaseLost(error: unknown): boolean {
  const sqlState = sqlStateOf(error);
  // SQLSTATE classes 08 (connection), 53 (resources), 57P (shut down, cannot connect now).
  return sqlState ? /^(08|53|57P)/.test(sqlState) : error instanceof Error && !(error instanceof RuntimeError);
}

/**
 * A read or claim that failed because the database could not be reached (down, restarting,
 * out of connections) becomes the retryable storageUnavailable; any other error (a bug) stays
 * what it is.
 */
export function unreachable(error: unknown): unknown {
  if (!databaseLost(error)) return error;
  const code = (error as { code?: unknown }).code; // a SQLSTATE, or a socket error's (ECONNREFUSED)
  return new RuntimeError(
    "storageUnavailable",
    `The database cannot be reached (${error instanceof Error ? error.message : String(error)}); try again.`,
    { cause: typeof code === "string" ? code : "unreachable" },
  );
}

/**
 * Runs a write whose answer may be lost: when the connection breaks as it commits, the database
 * may have applied it all the same. Then `look` reads what the write did, and its answer stands
 * for the write's; when it finds nothing (undefined), the write failed: storageUnavailable. Any
 * other error is thrown as it is.
 */
export async function lookIfLost<T>(write: () => Promise<T>, look: () => Promise<T | undefined>): Promise<T> {
  try {
    return await write();
  } catch (error) {
    if (!databaseLost(error)) throw error;
    const found = await look();
    if (found === undefined) throw unreachable(error);
    return found;
  }
}
