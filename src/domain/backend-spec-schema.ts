// The zod shape of a backend spec, as clients and the config file write it.
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
