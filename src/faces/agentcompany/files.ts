// AgentCompany workspace files: ids (`<prefix>_<ULID>`) and YAML documents, written durably.
import { readFileSync } from "node:fs";
import { ulid } from "ulid";
import { writeFileDurably } from "../../durable-file.js";
import { yaml } from "../../yaml.js";

export function newId(prefix: string): string {
  return `${prefix}_${ulid()}`;
}

export function writeYaml(file: string, value: unknown): void {
  writeFileDurably(file, yaml().stringify(value));
}

/** A YAML document, or undefined when the file does not exist; throws on invalid YAML. */
export function readYaml(file: string): unknown {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
  return yaml().parse(text) as unknown;
}
