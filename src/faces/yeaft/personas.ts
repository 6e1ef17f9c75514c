// The agent's group-chat personas file: a JSON array of {name, description?, systemPrompt, model?}.
import { readFileSync } from "node:fs";
import { z } from "zod";
import type { Persona } from "./driver.js";

const PersonasFile = z.array(
  z.object({ name: z.string().min(1), description: z.string().optional(), systemPrompt: z.string(), model: z.string().optional() }),
);

/** The personas in `file`, or what is wrong with it in one line. */
export function readPersonas(file: string): Persona[] | string {
  const parsed = PersonasFile.safeParse(JSON.parse(readFileSync(file, "utf8")));
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  return `${file}: ${issue?.path.join(".")}: ${issue?.message}`;
}
