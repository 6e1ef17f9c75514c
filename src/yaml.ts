// The YAML parser and printer, loaded on first use. Bundled with the runtime, its ~115 kB were
// compiled on every start (~7 ms before the runtime was up), though most SKILL.md front matter
// never needs it (front-matter.ts reads the plain kind itself).
import { createRequire } from "node:module";

type Yaml = typeof import("yaml");
let loaded: Yaml | undefined;

/** As pino in log.ts: in the bundle a CommonJS file of its own next to the chunks, required here. */
export function yaml(): Yaml {
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- in the bundle, the bundler's require
  return (loaded ??= typeof require === "function" ? (require("yaml") as Yaml) : (createRequire(import.meta.url)("yaml") as Yaml));
}
