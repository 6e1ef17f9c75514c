// Statements PostgreSQL parses and plans once per connection. An unnamed statement is planned
// on every call: in the cluster bench's run of 200 turns, planning the 2,000 reads of a thread's
// row cost PostgreSQL four times what running them did. A named one is parsed on a connection's
// first use (`pg` remembers which it sent) and, once its plan is found not to depend on the
// values, planned no more.
import type { QueryConfig } from "pg";

/** The name given to each statement's text: one name per text in the process, so a connection never sees a name reused. */
const names = new Map<string, string>();

/** The statement as a query of its own prepared statement. */
export function prepared(text: string, values: readonly unknown[] = []): QueryConfig {
  let name = names.get(text);
  if (name === undefined) names.set(text, (name = `sy${names.size + 1}`));
  return { name, text, values: [...values] };
}

/**
 * The names of the statements whose text holds `fragment`. After a connection's first use of a
 * statement, its messages carry the name, not the text: what looks for a statement on the wire
 * (a test's proxy) looks for these too.
 */
export function preparedNamesOf(fragment: string): string[] {
  return [...names].filter(([text]) => text.includes(fragment)).map(([, name]) => name);
}
