// Output of the AgentCraft CLI: `table` (default, for people), `json` (for scripts), `quiet`
// (names only, one per line).
export type Format = "table" | "json" | "quiet";
export const FORMATS: Format[] = ["table", "json", "quiet"];

type Row = Record<string, unknown>;

/** Columns shown by `table` for each kind of list; the first is the name `quiet` prints. */
export const COLUMNS = {
  agent: ["name", "status", "templateName", "backendType", "launchMode", "pid"],
  template: ["name", "version", "backend", "description"],
  component: ["name", "description"],
  session: ["sessionId", "agentName", "state", "clientId", "lastActivityAt"],
} as const;

function cell(value: unknown): string {
  if (value === undefined || value === null) return "-";
  if (typeof value === "object") {
    const type = (value as { type?: unknown }).type;
    return typeof type === "string" ? type : JSON.stringify(value);
  }
  return String(value);
}

export function formatList(rows: Row[], columns: readonly string[], format: Format): string {
  if (format === "json") return JSON.stringify(rows, null, 2);
  if (format === "quiet") return rows.map((r) => cell(r[columns[0]!])).join("\n");
  if (rows.length === 0) return "(none)";
  const table = [columns.map((c) => c.toUpperCase()), ...rows.map((r) => columns.map((c) => cell(r[c])))];
  const widths = columns.map((_, i) => Math.max(...table.map((line) => line[i]!.length)));
  return table.map((line) => line.map((v, i) => (i === line.length - 1 ? v : v.padEnd(widths[i]!))).join("  ")).join("\n");
}

export function formatOne(row: Row, nameKey: string, format: Format): string {
  if (format === "json") return JSON.stringify(row, null, 2);
  if (format === "quiet") return cell(row[nameKey]);
  const keys = Object.keys(row);
  const width = Math.max(...keys.map((k) => k.length));
  return keys
    .map((k) => {
      const v = row[k];
      const text = typeof v === "object" && v !== null ? JSON.stringify(v) : cell(v);
      return `${k.padEnd(width)}  ${text}`;
    })
    .join("\n");
}
