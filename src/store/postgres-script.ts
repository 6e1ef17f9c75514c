// Several parameterised statements sent as one script: PostgreSQL runs the statements of one
// simple-protocol query as one transaction, in one round trip. The values are written into the
// text as literals (E'' strings, which mean the same whatever standard_conforming_strings says).

/** A statement with `$n` placeholders and its values, as `client.query(text, values)` takes them. */
export interface Statement {
  text: string;
  values: readonly unknown[];
}

/** The statements as one script, each placeholder replaced by its value's literal. */
export function script(statements: readonly Statement[]): string {
  return statements.map(({ text, values }) => text.replace(/\$(\d+)/g, (_, n: string) => literal(values[Number(n) - 1]))).join(";\n");
}

/** A value as an SQL literal: null, a number, a boolean, text, or an array of those (as a text array literal). */
export function literal(value: unknown): string {
  if (value === null || value === undefined) return "NULL";
  if (typeof value === "number") {
    if (!Number.isFinite(value)) throw new TypeError(`Not a finite number: ${value}`);
    return String(value);
  }
  if (typeof value === "boolean") return value ? "TRUE" : "FALSE";
  if (Array.isArray(value)) return text(arrayLiteral(value));
  if (typeof value === "string") return text(value);
  throw new TypeError(`No SQL literal for a ${typeof value}`);
}

function text(value: string): string {
  return `E'${value.replace(/[\\']/g, "\\$&")}'`;
}

/** An array's input form: `{"a","b",NULL}`, each element quoted with `"` and `\` escaped. */
function arrayLiteral(values: readonly unknown[]): string {
  return `{${values.map((v) => (v === null || v === undefined ? "NULL" : `"${String(v).replace(/[\\"]/g, "\\$&")}"`)).join(",")}}`;
}
