// AgentCompany workspace files: ids (`<prefix>_<ULID>`), YAML documents, and durable writes
// (temp file, fsync, rename, directory fsync), so a crash leaves the old file or the new one.
import { closeSync, fsyncSync, mkdirSync, openSync, readFileSync, renameSync, writeSync } from "node:fs";
import path from "node:path";
import { ulid } from "ulid";
import YAML from "yaml";

export function newId(prefix: string): string {
  return `${prefix}_${ulid()}`;
}

/** Writes `text` to `file` durably and whole. */
export function writeDurable(file: string, text: string): void {
  mkdirSync(path.dirname(file), { recursive: true });
  const temp = `${file}.${process.pid}.${Date.now().toString(36)}.tmp`;
  const fd = openSync(temp, "w", 0o644);
  try {
    writeSync(fd, text);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(temp, file);
  syncDir(path.dirname(file));
}

function syncDir(dir: string): void {
  const fd = openSync(dir, "r");
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

export function writeYaml(file: string, value: unknown): void {
  writeDurable(file, YAML.stringify(value));
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
  return YAML.parse(text) as unknown;
}
