// Backend specs: the `--backend` flag's syntax and how a spec reads in logs. The zod shape is in
// backend-spec-schema.ts, apart, so that start-up does not load zod.
import type { BackendSpec } from "./model.js";

export const BACKEND_TYPES = ["builtin", "claude-code", "codex", "acp"] as const satisfies ReadonlyArray<BackendSpec["type"]>;

/**
 * `--backend builtin | claude-code | codex | acp:<command line>`. The ACP command line is split
 * on white space, with "double" or 'single' quotes keeping an argument together.
 */
export function parseBackendFlag(value: string): BackendSpec {
  const trimmed = value.trim();
  if (trimmed.startsWith("acp:")) {
    const words = splitCommandLine(trimmed.slice(4));
    const [cmd, ...rest] = words;
    if (!cmd) throw new Error(`--backend ${value}: name the ACP agent's command, e.g. acp:claude-agent-acp`);
    return { type: "acp", command: cmd, args: rest };
  }
  if (trimmed === "builtin" || trimmed === "claude-code" || trimmed === "codex") return { type: trimmed };
  throw new Error(`--backend ${value}: expected builtin, claude-code, codex or acp:<command line>`);
}

export function splitCommandLine(line: string): string[] {
  const words: string[] = [];
  const pattern = /"((?:[^"\\]|\\.)*)"|'([^']*)'|(\S+)/g;
  for (const match of line.matchAll(pattern)) words.push(match[1]?.replace(/\\(.)/g, "$1") ?? match[2] ?? match[3] ?? "");
  return words;
}

/** How a spec reads in logs and in `backend/list`. */
export function describeSpec(spec: BackendSpec): string {
  if (spec.type === "builtin") return "builtin";
  const cmd = [spec.command, ...(spec.args ?? [])].filter(Boolean).join(" ");
  return cmd ? `${spec.type} (${cmd})` : spec.type;
}
