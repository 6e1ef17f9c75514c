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

/** Whether a URL carries a password (which a command line shows to every user of the machine). */
export function hasPassword(url: string): boolean {
  try {
    return new URL(url).password !== "";
  } catch {
    return false; // not a URL: the configuration says so
  }
}
