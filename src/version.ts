// The package version, read once from the nearest package.json named "switchyard" (the
// compiled modules and the bundled CLI sit at different depths below it).
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

function readVersion(): string {
  for (let dir = path.dirname(fileURLToPath(import.meta.url)); ; dir = path.dirname(dir)) {
    const file = path.join(dir, "package.json");
    if (existsSync(file)) {
      const pkg = JSON.parse(readFileSync(file, "utf8")) as { name?: string; version?: string };
      if (pkg.name === "switchyard" && pkg.version) return pkg.version;
    }
    if (path.dirname(dir) === dir) return "0.0.0";
  }
}

export const VERSION: string = readVersion();
