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
   * ancestor is resolved so a symlinked parent cannot point outside, and a dangling symlink is
   * judged by its target.
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

/** Symlinks followed while resolving one path before giving up, as the kernel does (ELOOP). */
const MAX_LINKS = 40;

function realpathOfNearestAncestor(absolute: string, links = 0): string {
  const missing: string[] = [];
  let current = absolute;
  for (;;) {
    try {
      return path.join(fs.realpathSync(current), ...[...missing].reverse());
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
      // A dangling symlink says ENOENT too, but writing through it creates its target: resolve
      // the target, so that is what gets checked.
      const target = symlinkTarget(current);
      if (target !== undefined) {
        if (links >= MAX_LINKS) throw Object.assign(new Error(`Too many symbolic links: ${absolute}`), { code: "ELOOP" });
        return realpathOfNearestAncestor(path.join(path.resolve(path.dirname(current), target), ...[...missing].reverse()), links + 1);
      }
      const parent = path.dirname(current);
      if (parent === current) return absolute;
      missing.push(path.basename(current));
      current = parent;
    }
  }
}

function symlinkTarget(p: string): string | undefined {
  try {
    return fs.lstatSync(p).isSymbolicLink() ? fs.readlinkSync(p) : undefined;
  } catch {
    return undefined;
  }
}
