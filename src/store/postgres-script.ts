// Several parameterised statements sent as one script: PostgreSQL runs the statements of one
// simple-protocol query as one transaction, in one round trip. The values are written into the
// text as literals. Strings are dollar-quoted, which PostgreSQL reads as they are, and an array's
// elements are quoted by JSON.stringify: building a commit of many events costs no pass over
// their text in JS (escaping each one for an array literal, then the whole for an E'' literal,
// was ~7% of a cluster node's CPU).

/** A statement with `$n` placeholders and its values, as `client.query(text, values)` takes them. */
export interface Statement {
  text: string;
  values: readonly unknown[];
}

/** The statements as one script, each placeholder replaced by its value's literal. */
export function script(statements: readonly Statement[]): string {
  return statements.map(({ text, values }) => text.replace(/\$(\d+)/g, (_, n: string) => literal(values[Number(n) - 1]))).join(";\n");
}

/** A value as an SQL literal: null, a number, a boolean, text, or an array of those. */
export function literal(value: unknown): string {
  if (value === null || value === undefined) return "NULL";
  if (typeof value === "number") {
    if (!Number.isFinite(value)) throw new TypeError(`Not a finite number: ${value}`);
    return String(value);
  }
  if (typeof value === "boolean") return value ? "TRUE" : "FALSE";
  if (Array.isArray(value)) return array(value);
  if (typeof value === "string") return text(value);
  throw new TypeError(`No SQL literal for a ${typeof value}`);
}

/** `$s$…$s$`, with a tag the text cannot end early (event data seldom holds a `$` at all). */
export function text(value: string): string {
  if (!value.includes("$")) return `$s$${value}$s$`;
  for (let n = 0; ; n++) {
    const tag = `$s${n}$`;
    if ((value + tag).indexOf(tag) === value.length) return `${tag}${value}${tag}`;
  }
}

/** An array as one literal of its input form: PostgreSQL reads it far quicker than an ARRAY[…] of as many. */
function array(values: readonly unknown[]): string {
  return text(arrayInput(values));
}

/**
 * An array's input form, `{"a","b",NULL}`: also what a parameter of an array type takes as
 * text. `pg` would make the same, escaping each element in JS on the way (~4% of a cluster
 * node's CPU profile at a model's pace, for the events of each commit).
 */
export function arrayInput(values: readonly unknown[]): string {
  return `{${values.map(element).join(",")}}`;
}

/** Characters JSON writes as escapes that the array input would read differently (`\n` as `n`). */
// eslint-disable-next-line no-control-regex -- control characters are what it looks for
const JSON_ESCAPED = /[\u0000-\u001f\ud800-\udfff]/;

function element(value: unknown): string {
  if (value === null || value === undefined) return "NULL";
  if (typeof value === "number") return literal(value);
  const s = String(value);
  // JSON quotes a string as the array input wants it (`"`, with `\"` and `\\` inside) wherever
  // it leaves the characters as they are, and it does so natively: event data needs no pass in JS.
  return JSON_ESCAPED.test(s) ? `"${s.replace(/[\\"]/g, "\\$&")}"` : JSON.stringify(s);
}
