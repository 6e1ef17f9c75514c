// One server per data directory: a lock file holding the owner's pid, created exclusively.
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { pidAlive } from "../pid.js";

export const LOCK_FILE = "switchyard.lock";

interface LockContent {
  pid: number;
  startedAt: string;
}

/** Lock files held by this process: a lock naming our own pid is only live if we hold it here. */
const heldByUs = new Set<string>();

function readLock(file: string): { raw: string; content?: LockContent } | undefined {
  let raw: string;
  try {
    raw = readFileSync(file, "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw err;
  }
  try {
    const value = JSON.parse(raw) as Partial<LockContent>;
    if (typeof value.pid === "number" && Number.isInteger(value.pid) && value.pid > 0) {
      return { raw, content: { pid: value.pid, startedAt: String(value.startedAt) } };
    }
  } catch {
    // unparsable: treated as stale
  }
  return { raw };
}

/**
 * Takes the data directory's lock or throws if another live server holds it. A lock left by a
 * dead process is replaced. `release()` removes the file only if it is still ours.
 */
export function acquireDataDirLock(dataDir: string): { release(): void } {
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const file = path.resolve(dataDir, LOCK_FILE);
  const mine: LockContent = { pid: process.pid, startedAt: new Date().toISOString() };
  const raw = JSON.stringify(mine);

  for (let attempt = 0; attempt < 5; attempt++) {
    try {
      writeFileSync(file, raw, { flag: "wx", mode: 0o600 });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
      const existing = readLock(file);
      if (existing === undefined) continue; // removed meanwhile: try again
      const pid = existing.content?.pid;
      // Our own pid is live only if this process holds the lock (pids are reused, e.g. pid 1 in containers).
      const live = pid !== undefined && (pid === process.pid ? heldByUs.has(file) : pidAlive(pid));
      if (live) throw new Error(`Another Switchyard server (pid ${pid}) is using data directory ${path.resolve(dataDir)}`, { cause: err });
      // Stale. Re-check the content just before removing so a lock another starter has just
      // written in its place is not deleted.
      if (readLock(file)?.raw === existing.raw) rmSync(file, { force: true });
      continue;
    }
    heldByUs.add(file);
    let released = false;
    return {
      release(): void {
        if (released) return;
        released = true;
        heldByUs.delete(file);
        if (readLock(file)?.raw === raw) rmSync(file, { force: true });
      },
    };
  }
  throw new Error(`Could not acquire the lock ${file}`);
}
