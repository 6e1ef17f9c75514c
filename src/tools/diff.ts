// Accumulates a turn's file changes and renders them as one unified diff.
import { createTwoFilesPatch } from "diff";
import type { Workspace } from "./workspace.js";

interface FileState {
  /** Content before the turn first touched the file; null when the turn created it. */
  before: string | null;
  after: string;
}

export class TurnChanges {
  // Keyed by absolute path; Map keeps first-touched order, but output is sorted by path.
  private readonly files = new Map<string, FileState>();

  record(change: { path: string; before: string | null; after: string }): void {
    const known = this.files.get(change.path);
    if (known) known.after = change.after;
    else this.files.set(change.path, { before: change.before, after: change.after });
  }

  /** Absolute paths of the files whose content differs from before the turn. */
  changedPaths(): string[] {
    return [...this.files.entries()]
      .filter(([, state]) => state.before !== state.after)
      .map(([file]) => file)
      .sort();
  }

  unifiedDiff(workspace: Workspace): string {
    return this.changedPaths()
      .map((file) => {
        const state = this.files.get(file)!;
        return fileDiff(workspace.relative(file), state.before, state.after);
      })
      .join("");
  }
}

/** A git-style unified diff of one file; `before` null means the file is new. */
export function fileDiff(relPath: string, before: string | null, after: string): string {
  const patch = createTwoFilesPatch(before === null ? "/dev/null" : `a/${relPath}`, `b/${relPath}`, before ?? "", after);
  // Swap jsdiff's "=====" separator line for a git header so tools like `git apply` accept it.
  const header = `diff --git a/${relPath} b/${relPath}\n${before === null ? "new file mode 100644\n" : ""}`;
  return header + patch.replace(/^=+\n/, "");
}
