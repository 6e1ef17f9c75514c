// Process liveness by pid, for processes this one may not have spawned (attached agents, lock holders).
import { readFileSync } from "node:fs";

/**
 * Whether a process with this pid runs (EPERM: it does, owned by someone else). A zombie, dead
 * but not yet reaped by its parent, does not count.
 */
export function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
  return !isZombie(pid);
}

function isZombie(pid: number): boolean {
  if (process.platform !== "linux") return false;
  try {
    // "pid (comm) S ...": the state follows the last ")" (comm may contain spaces and parentheses).
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) === "Z";
  } catch {
    return false;
  }
}
