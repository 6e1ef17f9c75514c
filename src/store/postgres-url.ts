// What the commands and the server say of a PostgreSQL URL, without loading the store.

/** Whether a --store value names a PostgreSQL database (postgres:// or postgresql://). */
export function isPostgresUrl(value: string): boolean {
  return /^postgres(ql)?:\/\//.test(value);
}

/** The database a URL names, for messages: its password hidden. */
export function describeDatabase(url: string): string {
  try {
    const where = new URL(url);
    where.password = where.password ? "***" : "";
    return where.href;
  } catch {
    return "(a URL that does not parse)";
  }
}
