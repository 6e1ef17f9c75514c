// Path confinement: every path a tool touches must resolve (symlinks included) inside the
// thread's workspace root.
import fs from "node:fs";
import path from "node:path";

export class PathEscapeError extends Error {
  constructor(requested: string) {
    super(`Path "${requested}" is outside the workspace.`);
    this.name = "PathEscapeError";
  }
}

export class Workspace {
  /** The workspace root with symlinks resolved. */
  readonly root: string;

  constructor(root: string) {
    this.root = fs.realpathSync(path.resolve(root));
  }

  /**
   * Resolves a user- or model-supplied path (absolute or relative to the root) and checks
   * that it stays inside the workspace. For paths that do not exist yet, the nearest existing
   * ancestor is resolved so a symlinked parent cannot point outside.
   */
  resolve(requested: string): string {
    const absolute = path.resolve(this.root, requested);
    const real = realpathOfNearestAncestor(absolute);
    if (!this.contains(real)) throw new PathEscapeError(requested);
    return real;
  }

  /** The path relative to the root, with forward slashes, for display and scope keys. */
  relative(absolute: string): string {
    return path.relative(this.root, absolute).split(path.sep).join("/") || ".";
  }

  contains(absolute: string): boolean {
    const rel = path.relative(this.root, absolute);
    return rel === "" || (!rel.startsWith("..") && !path.isAbsolute(rel));
  }
}

function realpathOfNearestAncestor(absolute: string): string {
  const missing: string[] = [];
  let current = absolute;
  for (;;) {
    try {
      return path.join(fs.realpathSync(current), ...missing.reverse());
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
      const parent = path.dirname(current);
      if (parent === current) return absolute;
      missing.push(path.basename(current));
      current = parent;
    }
  }
}
