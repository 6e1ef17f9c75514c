// Backend specs: the zod shape (config file, faces' params) and the `--backend` flag's syntax.
import { z } from "zod";
import type { BackendSpec } from "./model.js";
import type { Same } from "./same-type.js";

const command = z.string().min(1, "expected a non-empty command");
const args = z.array(z.string()).optional();
const env = z.record(z.string(), z.string()).optional();

/** A backend spec as clients and the config file write it. */
export const BackendSpecSchema = z.discriminatedUnion("type", [
  z.strictObject({ type: z.literal("builtin") }),
  z.strictObject({ type: z.literal("claude-code"), command: command.optional(), args, env }),
  z.strictObject({ type: z.literal("codex"), command: command.optional(), args, env }),
  z.strictObject({ type: z.literal("acp"), command, args, env }),
]);

// The schema and the domain type agree.
const _specAgrees: Same<z.output<typeof BackendSpecSchema>, BackendSpec> = true;
void _specAgrees;

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
