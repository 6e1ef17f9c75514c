import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import type { AnyTool, ToolContext, ToolResult } from "../../src/tools/tool.js";
import { Workspace } from "../../src/tools/workspace.js";
import type { PlanStep } from "../../src/domain/model.js";
import { readFileTool } from "../../src/tools/read-file.js";
import { writeFileTool } from "../../src/tools/write-file.js";
import { editTool } from "../../src/tools/edit.js";
import { listFilesTool } from "../../src/tools/list-files.js";
import { globToRegExp } from "../../src/tools/files.js";
import { globTool } from "../../src/tools/glob.js";
import { searchFilesTool, searchInWorker } from "../../src/tools/search-files.js";
import { bashTool } from "../../src/tools/bash.js";
import { updatePlanTool } from "../../src/tools/plan.js";
import { createDefaultRegistry } from "../../src/tools/registry.js";
import { TurnChanges } from "../../src/tools/diff.js";

interface Harness {
  ctx: ToolContext;
  controller: AbortController;
  chunks: { chunk: string; stream: "stdout" | "stderr" }[];
  changes: { path: string; before: string | null; after: string }[];
  plans: { explanation?: string; steps: PlanStep[] }[];
  /** Resolves once the streamed output satisfies the predicate. */
  waitForOutput(predicate: (text: string) => boolean): Promise<string>;
}

function harness(root: string, commandTimeoutMs = 10_000): Harness {
  const controller = new AbortController();
  const chunks: Harness["chunks"] = [];
  const waiters: { predicate: (text: string) => boolean; resolve: (text: string) => void }[] = [];
  const streamed = () => chunks.map((c) => c.chunk).join("");
  const h: Harness = {
    controller,
    chunks,
    changes: [],
    plans: [],
    ctx: {
      workspace: new Workspace(root),
      callId: "call_test",
      signal: controller.signal,
      commandTimeoutMs,
      emitOutput(chunk, stream) {
        chunks.push({ chunk, stream });
        const text = streamed();
        for (const w of waiters.splice(0)) {
          if (w.predicate(text)) w.resolve(text);
          else waiters.push(w);
        }
      },
      recordFileChange: (change) => void h.changes.push(change),
      updatePlan: (plan) => void h.plans.push(plan),
    },
    waitForOutput(predicate) {
      if (predicate(streamed())) return Promise.resolve(streamed());
      return new Promise((resolve) => waiters.push({ predicate, resolve }));
    },
  };
  return h;
}

/** Validates the arguments like the engine does, then runs the tool. */
function run(tool: AnyTool, args: unknown, h: Harness): Promise<ToolResult> {
  return tool.execute(tool.input.parse(args), h.ctx);
}

let tmp: string;
let root: string;
let outside: string;

before(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), "switchyard-tools-"));
  root = path.join(tmp, "ws");
  outside = path.join(tmp, "outside");
  fs.mkdirSync(root);
  fs.mkdirSync(outside);
  fs.writeFileSync(path.join(outside, "secret.txt"), "TOPSECRET\n");
});

after(() => fs.rmSync(tmp, { recursive: true, force: true }));

/** A fresh workspace directory per test, so tests do not see each other's files. */
function freshWorkspace(files: Record<string, string> = {}): string {
  const dir = fs.mkdtempSync(path.join(root, "case-"));
  for (const [rel, content] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(dir, rel)), { recursive: true });
    fs.writeFileSync(path.join(dir, rel), content);
  }
  return dir;
}

describe("read_file", () => {
  it("numbers lines and reads ranges", async () => {
    const h = harness(freshWorkspace({ "a.txt": "one\ntwo\nthree\nfour\n" }));
    const all = await run(readFileTool, { path: "a.txt" }, h);
    assert.equal(all.output, "    1\tone\n    2\ttwo\n    3\tthree\n    4\tfour");
    assert.ok(!all.isError);
    const part = await run(readFileTool, { path: "a.txt", startLine: 2, endLine: 3 }, h);
    assert.equal(part.output, "[lines 2-3 of 4]\n    2\ttwo\n    3\tthree");
    const clamped = await run(readFileTool, { path: "a.txt", startLine: 4, endLine: 99 }, h);
    assert.match(clamped.output, /of 4\]\n {4}4\tfour$/);
  });

  it("reports bad ranges, missing files, directories and binaries", async () => {
    const dir = freshWorkspace({ "a.txt": "x\ny\nz\n", "sub/b.txt": "y" });
    fs.writeFileSync(path.join(dir, "bin.dat"), Buffer.from([1, 0, 2]));
    const h = harness(dir);
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ path: "a.txt", startLine: 5 }, /startLine 5 is past the end of a\.txt \(3 lines\)/],
      [{ path: "a.txt", startLine: 3, endLine: 2 }, /endLine 2 is before startLine 3/],
      [{ path: "nope.txt" }, /No such file or directory: nope\.txt/],
      [{ path: "sub" }, /is a directory/],
      [{ path: "bin.dat" }, /binary/],
    ];
    for (const [args, expected] of cases) {
      const result = await run(readFileTool, args, h);
      assert.equal(result.isError, true, JSON.stringify(args));
      assert.match(result.output, expected);
    }
    assert.throws(() => readFileTool.input.parse({ path: "a.txt", startLine: 0 }));
  });

  it("truncates huge files with a marker", async () => {
    const big = Array.from({ length: 20_000 }, (_, i) => `line ${i} ${"x".repeat(20)}`).join("\n");
    const h = harness(freshWorkspace({ "big.txt": big }));
    const result = await run(readFileTool, { path: "big.txt" }, h);
    assert.ok(Buffer.byteLength(result.output) < 110_000);
    assert.match(result.output, /\[truncated: \d+ more lines; continue with startLine=\d+\]$/);
  });
});

describe("write_file", () => {
  it("creates parent directories and records changes", async () => {
    const dir = freshWorkspace();
    const h = harness(dir);
    const created = await run(writeFileTool, { path: "deep/er/new.txt", content: "hello\n" }, h);
    assert.ok(!created.isError);
    assert.match(created.output, /Created deep\/er\/new\.txt/);
    const file = path.join(fs.realpathSync(dir), "deep/er/new.txt");
    assert.equal(fs.readFileSync(file, "utf8"), "hello\n");
    await run(writeFileTool, { path: "deep/er/new.txt", content: "bye\n" }, h);
    assert.deepEqual(h.changes, [
      { path: file, before: null, after: "hello\n" },
      { path: file, before: "hello\n", after: "bye\n" },
    ]);
  });

  it("asks for file approval", () => {
    const dir = freshWorkspace();
    const ws = new Workspace(dir);
    const ask = writeFileTool.approval!({ path: "src/a.ts", content: "" }, { workspace: ws });
    assert.deepEqual(ask, {
      approvalType: "file",
      operation: "write src/a.ts",
      target: path.join(ws.root, "src/a.ts"),
      scopeKey: "file:src/a.ts",
      reason: "Agent wants to write a file.",
    });
  });

  it("refuses to overwrite a directory", async () => {
    const h = harness(freshWorkspace({ "d/x": "" }));
    const result = await run(writeFileTool, { path: "d", content: "x" }, h);
    assert.equal(result.isError, true);
    assert.match(result.output, /is a directory/);
  });
});

describe("edit", () => {
  it("replaces a unique string literally", async () => {
    const dir = freshWorkspace({ "a.ts": "const a = 1;\nconst b = 2;\n" });
    const h = harness(dir);
    const result = await run(editTool, { path: "a.ts", oldString: "b = 2", newString: "b = '$&'" }, h);
    assert.ok(!result.isError);
    assert.equal(fs.readFileSync(path.join(dir, "a.ts"), "utf8"), "const a = 1;\nconst b = '$&';\n");
    assert.equal(h.changes.length, 1);
    assert.equal(h.changes[0]!.before, "const a = 1;\nconst b = 2;\n");
  });

  it("reports missing and ambiguous matches, and honours replaceAll", async () => {
    const dir = freshWorkspace({ "a.txt": "x x x" });
    const h = harness(dir);
    const missing = await run(editTool, { path: "a.txt", oldString: "y", newString: "z" }, h);
    assert.equal(missing.isError, true);
    assert.match(missing.output, /not found in a\.txt/);
    const ambiguous = await run(editTool, { path: "a.txt", oldString: "x", newString: "z" }, h);
    assert.equal(ambiguous.isError, true);
    assert.match(ambiguous.output, /found 3 times/);
    assert.equal(h.changes.length, 0);
    const all = await run(editTool, { path: "a.txt", oldString: "x", newString: "z", replaceAll: true }, h);
    assert.match(all.output, /replaced 3 occurrences/);
    assert.equal(fs.readFileSync(path.join(dir, "a.txt"), "utf8"), "z z z");
    const noFile = await run(editTool, { path: "b.txt", oldString: "x", newString: "z" }, h);
    assert.match(noFile.output, /No such file/);
    assert.equal(noFile.isError, true);
  });

  it("asks for file approval with an edit operation", () => {
    const ws = new Workspace(freshWorkspace());
    const ask = editTool.approval!({ path: "./x/y.ts", oldString: "a", newString: "b" }, { workspace: ws });
    assert.equal(ask?.operation, "edit x/y.ts");
    assert.equal(ask?.scopeKey, "file:x/y.ts");
    assert.equal(ask?.approvalType, "file");
  });
});

describe("list_files", () => {
  it("lists sorted entries with trailing slashes, recursively without .git and node_modules", async () => {
    const h = harness(freshWorkspace({ "b.txt": "", "a/z.txt": "", "a/c/d.txt": "", ".git/HEAD": "", "node_modules/m/i.js": "" }));
    const flat = await run(listFilesTool, {}, h);
    assert.equal(flat.output, [".git/", "a/", "b.txt", "node_modules/"].join("\n"));
    const deep = await run(listFilesTool, { recursive: true }, h);
    assert.equal(deep.output, ["a/", "a/c/", "a/c/d.txt", "a/z.txt", "b.txt"].join("\n"));
    const sub = await run(listFilesTool, { path: "a" }, h);
    assert.equal(sub.output, "c/\nz.txt");
    const file = await run(listFilesTool, { path: "b.txt" }, h);
    assert.equal(file.isError, true);
    const missing = await run(listFilesTool, { path: "nope" }, h);
    assert.equal(missing.isError, true);
    assert.match(missing.output, /No such file or directory/);
  });
});

describe("glob", () => {
  it("converts globs to regular expressions", () => {
    const cases: [string, string, boolean][] = [
      ["*.ts", "a.ts", true],
      ["*.ts", "src/a.ts", false],
      ["**/*.ts", "a.ts", true],
      ["**/*.ts", "src/x/a.ts", true],
      ["src/**", "src/x/a.ts", true],
      ["src/**/test/*.js", "src/test/a.js", true],
      ["src/**/test/*.js", "src/a/b/test/a.js", true],
      ["?.md", "a.md", true],
      ["?.md", "ab.md", false],
      ["*.{ts,js}", "a.js", true],
      ["*.{ts,js}", "a.css", false],
      ["{src,lib/{a,b}}/*.c", "lib/b/x.c", true],
      ["[ab].txt", "b.txt", true],
      ["[!ab].txt", "c.txt", true],
      ["a.b", "axb", false],
      ["(x)+.txt", "(x)+.txt", true],
    ];
    for (const [pattern, candidate, expected] of cases) {
      assert.equal(globToRegExp(pattern).test(candidate), expected, `${pattern} vs ${candidate}`);
    }
  });

  it("finds files, sorted and relative to the workspace", async () => {
    const h = harness(freshWorkspace({ "src/a.ts": "", "src/b.js": "", "src/sub/c.ts": "", "x.ts": "", "node_modules/p/i.ts": "" }));
    assert.equal((await run(globTool, { pattern: "**/*.ts" }, h)).output, "src/a.ts\nsrc/sub/c.ts\nx.ts");
    assert.equal((await run(globTool, { pattern: "*.{ts,js}", path: "src" }, h)).output, "src/a.ts\nsrc/b.js");
    const none = await run(globTool, { pattern: "*.py" }, h);
    assert.ok(!none.isError);
    assert.match(none.output, /No files match/);
  });
});

describe("search_files", () => {
  it("stops a pathological regular expression at its time limit without blocking the server", async () => {
    const dir = freshWorkspace({ "evil.txt": `${"a".repeat(40)}!\n` });
    let ticks = 0;
    const ticker = setInterval(() => ticks++, 10);
    const t0 = Date.now();
    try {
      const job = { pattern: "^(a+)+$", caseInsensitive: false, base: dir, baseIsDir: true, root: dir };
      const found = await searchInWorker(job, new AbortController().signal, 300);
      assert.ok("error" in found && /took longer than/.test(found.error), JSON.stringify(found));
      assert.ok(Date.now() - t0 < 5_000, "the worker was stopped");
      assert.ok(ticks >= 10, `the event loop kept running (${ticks} ticks)`);
    } finally {
      clearInterval(ticker);
    }
  });

  it("finds regex matches as path:line:text", async () => {
    const dir = freshWorkspace({
      "src/a.ts": "export function main() {}\nconst x = 1;\n",
      "src/b.js": "function Main() {}\n",
      "node_modules/m/i.ts": "function main() {}\n",
      ".git/config": "function main\n",
    });
    fs.writeFileSync(path.join(dir, "bin.dat"), Buffer.from("function main\0"));
    const h = harness(dir);
    const plain = await run(searchFilesTool, { pattern: "function\\s+main" }, h);
    assert.equal(plain.output, "src/a.ts:1:export function main() {}");
    const ci = await run(searchFilesTool, { pattern: "function main", caseInsensitive: true }, h);
    assert.equal(ci.output, "src/a.ts:1:export function main() {}\nsrc/b.js:1:function Main() {}");
    const globbed = await run(searchFilesTool, { pattern: "main", caseInsensitive: true, glob: "*.js" }, h);
    assert.equal(globbed.output, "src/b.js:1:function Main() {}");
    const oneFile = await run(searchFilesTool, { pattern: "const", path: "src/a.ts" }, h);
    assert.equal(oneFile.output, "src/a.ts:2:const x = 1;");
    const none = await run(searchFilesTool, { pattern: "zzz" }, h);
    assert.ok(!none.isError);
    assert.match(none.output, /No matches/);
  });

  it("reports an invalid regex", async () => {
    const h = harness(freshWorkspace());
    const result = await run(searchFilesTool, { pattern: "(unclosed" }, h);
    assert.equal(result.isError, true);
    assert.match(result.output, /Invalid regular expression: .*unclosed/i);
  });
});

describe("path confinement", () => {
  it("refuses every escape for every path-taking tool", async () => {
    const dir = freshWorkspace({ "ok.txt": "ok\n" });
    fs.symlinkSync(outside, path.join(dir, "outlink")); // directory link pointing outside
    fs.symlinkSync(path.join(outside, "secret.txt"), path.join(dir, "leak.txt")); // file link
    fs.symlinkSync(path.join(outside, "pwned.txt"), path.join(dir, "dangling.txt")); // link to a file that does not exist yet
    fs.symlinkSync("dangling.txt", path.join(dir, "chain.txt")); // a link to that link
    fs.symlinkSync(path.join(outside, "newdir"), path.join(dir, "danglingdir")); // link to a missing directory
    const h = harness(dir);
    const escapes = [
      "../x",
      "/etc/passwd",
      "leak.txt",
      "outlink/secret.txt",
      "outlink/new.txt",
      "outlink/a/b.txt",
      "dangling.txt",
      "chain.txt",
      "danglingdir/f.txt",
    ];
    const dirEscapes = ["..", "/etc", "outlink", "outlink/newdir"];

    const attempts: [AnyTool, Record<string, unknown>][] = [];
    for (const p of escapes) {
      attempts.push([readFileTool, { path: p }]);
      attempts.push([writeFileTool, { path: p, content: "pwned" }]);
      attempts.push([editTool, { path: p, oldString: "TOPSECRET", newString: "pwned" }]);
      attempts.push([searchFilesTool, { pattern: "TOPSECRET", path: p }]);
    }
    for (const p of dirEscapes) {
      attempts.push([listFilesTool, { path: p }]);
      attempts.push([listFilesTool, { path: p, recursive: true }]);
      attempts.push([globTool, { pattern: "**", path: p }]);
      attempts.push([searchFilesTool, { pattern: "TOPSECRET", path: p }]);
      attempts.push([writeFileTool, { path: `${p}/f.txt`, content: "pwned" }]);
    }
    for (const [tool, args] of attempts) {
      const result = await run(tool, args, h);
      assert.equal(result.isError, true, `${tool.name} ${JSON.stringify(args)}`);
      assert.match(result.output, /outside the workspace/, `${tool.name} ${JSON.stringify(args)}`);
      if (tool.approval) assert.equal(tool.approval(tool.input.parse(args), h.ctx), null);
    }
    assert.equal(fs.readFileSync(path.join(outside, "secret.txt"), "utf8"), "TOPSECRET\n");
    assert.deepEqual(fs.readdirSync(outside), ["secret.txt"]);
    assert.equal(h.changes.length, 0);
  });

  it("does not follow symlinks out of the workspace when walking", async () => {
    const dir = freshWorkspace({ "ok.txt": "ok\n" });
    fs.symlinkSync(outside, path.join(dir, "outlink"));
    fs.symlinkSync(path.join(outside, "secret.txt"), path.join(dir, "leak.txt"));
    const h = harness(dir);
    const search = await run(searchFilesTool, { pattern: "TOPSECRET" }, h);
    assert.match(search.output, /No matches/);
    const listed = await run(listFilesTool, { recursive: true }, h);
    assert.doesNotMatch(listed.output, /secret/);
    const globbed = await run(globTool, { pattern: "**/*.txt" }, h);
    assert.doesNotMatch(globbed.output, /secret/);
  });
});

/** True while the process exists and is not a zombie awaiting its reaper. */
function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2)[0] !== "Z";
  } catch {
    return false;
  }
}

describe("bash", () => {
  it("runs in the workspace root and reports the exit code", async () => {
    const dir = freshWorkspace({ "here.txt": "" });
    const h = harness(dir);
    const ok = await run(bashTool, { command: "ls; echo err >&2" }, h);
    assert.equal(ok.exitCode, 0);
    assert.ok(!ok.isError);
    assert.equal(ok.output, "here.txt\nerr\nexit code 0");
    assert.ok(h.chunks.some((c) => c.stream === "stderr" && c.chunk.includes("err")));
    const failed = await run(bashTool, { command: "exit 3" }, h);
    assert.equal(failed.exitCode, 3);
    assert.equal(failed.isError, true);
    assert.equal(failed.output, "exit code 3");
  });

  it("streams output chunks before the command ends", async () => {
    const h = harness(freshWorkspace());
    let settled = false;
    const done = run(bashTool, { command: "echo a; sleep 0.3; echo b" }, h).then((r) => {
      settled = true;
      return r;
    });
    await h.waitForOutput((text) => text.includes("a\n"));
    assert.equal(settled, false, "the first chunk must arrive while the command still runs");
    const result = await done;
    assert.equal(result.output, "a\nb\nexit code 0");
  });

  it("times out and kills the command", async () => {
    const h = harness(freshWorkspace(), 60_000);
    const started = Date.now();
    const result = await run(bashTool, { command: "echo start; sleep 20", timeoutMs: 200 }, h);
    assert.ok(Date.now() - started < 1500);
    assert.equal(result.timedOut, true);
    assert.equal(result.isError, true);
    assert.match(result.output, /^start\n.*timed out after 200 ms/s);
    const viaContext = await run(bashTool, { command: "sleep 20" }, harness(freshWorkspace(), 150));
    assert.equal(viaContext.timedOut, true);
  });

  it("kills the whole process group promptly on abort", async () => {
    const h = harness(freshWorkspace());
    const done = run(bashTool, { command: "sleep 30 & echo pid=$!; wait" }, h);
    const text = await h.waitForOutput((t) => /pid=\d+\n/.test(t));
    const pid = Number(/pid=(\d+)/.exec(text)![1]);
    assert.ok(isAlive(pid));
    const started = Date.now();
    h.controller.abort();
    const result = await done;
    assert.ok(Date.now() - started < 1000, "abort must not wait for the SIGKILL grace period");
    assert.equal(result.interrupted, true);
    // The signal was sent to the whole group; the child is gone once it is delivered and the
    // orphan reaped, which under load can take a moment after the shell's exit.
    const deadline = Date.now() + 2_000;
    while (isAlive(pid) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
    assert.equal(isAlive(pid), false, "the background child must be killed too");
  });

  it("does not start when already aborted", async () => {
    const h = harness(freshWorkspace());
    h.controller.abort();
    const result = await run(bashTool, { command: "touch ran" }, h);
    assert.equal(result.interrupted, true);
    assert.equal(fs.existsSync(path.join(h.ctx.workspace.root, "ran")), false);
  });

  it("bounds huge output", async () => {
    const h = harness(freshWorkspace());
    const result = await run(bashTool, { command: "head -c 500000 /dev/zero | tr '\\0' x; echo; echo END" }, h);
    assert.ok(result.output.length < 110_000);
    assert.match(result.output, /\[truncated: \d+ more characters\]/);
    assert.match(result.output, /END\nexit code 0$/);
  });

  it("asks for shell approval scoped by the exact command", () => {
    const ws = new Workspace(freshWorkspace());
    assert.deepEqual(bashTool.approval!({ command: "  git status --short" }, { workspace: ws }), {
      approvalType: "shell",
      operation: "  git status --short",
      target: ws.root,
      scopeKey: "shell:git status --short",
      reason: "Agent wants to execute a shell command.",
    });
    assert.equal(bashTool.approval!({ command: "git push --force" }, { workspace: ws })!.scopeKey, "shell:git push --force");
  });
});

describe("update_plan", () => {
  it("replaces the plan", async () => {
    const h = harness(freshWorkspace());
    const steps = [
      { step: "read", status: "completed" },
      { step: "write", status: "in_progress" },
    ];
    const result = await run(updatePlanTool, { explanation: "why", plan: steps }, h);
    assert.equal(result.output, "Plan updated");
    assert.deepEqual(h.plans, [{ explanation: "why", steps }]);
    assert.throws(() => updatePlanTool.input.parse({ plan: [{ step: "x", status: "done" }] }));
  });
});

describe("ToolRegistry", () => {
  it("exposes JSON Schema object specs for every builtin tool", () => {
    const registry = createDefaultRegistry();
    const specs = registry.specs();
    assert.deepEqual(specs.map((s) => s.name).sort(), [
      "ask_user",
      "bash",
      "edit",
      "glob",
      "list_files",
      "read_file",
      "search_files",
      "update_plan",
      "write_file",
    ]);
    for (const spec of specs) {
      assert.equal(spec.parameters.type, "object", spec.name);
      assert.equal(typeof spec.parameters.properties, "object", spec.name);
      assert.equal("$schema" in spec.parameters, false);
      assert.ok(spec.description.length > 20);
      assert.deepEqual(JSON.parse(JSON.stringify(spec.parameters)), spec.parameters);
    }
    const read = specs.find((s) => s.name === "read_file")!;
    assert.deepEqual(read.parameters.required, ["path"]);
    assert.equal(registry.specs()[0], specs[0], "specs are cached");
    assert.equal(registry.get("bash")?.kind, "shell");
    assert.equal(registry.get("nope"), undefined);
    const readOnly = registry.specs((t) => t.kind === "readOnly").map((s) => s.name);
    assert.deepEqual(readOnly.sort(), ["ask_user", "glob", "list_files", "read_file", "search_files"]);
  });
});

describe("TurnChanges", () => {
  it("diffs each file from its first before to its latest content", async () => {
    const dir = freshWorkspace({ "a.txt": "one\ntwo\nthree\n", "same.txt": "s\n" });
    const h = harness(dir);
    const changes = new TurnChanges();
    h.ctx.recordFileChange = (change) => changes.record(change);
    await run(editTool, { path: "a.txt", oldString: "two", newString: "2" }, h);
    await run(editTool, { path: "a.txt", oldString: "three", newString: "3" }, h);
    await run(writeFileTool, { path: "new/b.txt", content: "bee\n" }, h);
    await run(editTool, { path: "same.txt", oldString: "s", newString: "t" }, h);
    await run(editTool, { path: "same.txt", oldString: "t", newString: "s" }, h); // back to the original
    assert.equal(
      changes.unifiedDiff(h.ctx.workspace),
      [
        "diff --git a/a.txt b/a.txt",
        "--- a/a.txt",
        "+++ b/a.txt",
        "@@ -1,3 +1,3 @@",
        " one",
        "-two",
        "-three",
        "+2",
        "+3",
        "diff --git a/new/b.txt b/new/b.txt",
        "new file mode 100644",
        "--- /dev/null",
        "+++ b/new/b.txt",
        "@@ -0,0 +1,1 @@",
        "+bee",
        "",
      ].join("\n"),
    );
  });
});

describe("a thread's tool environment", () => {
  it("read_file, write_file and edit prefer it, and a failed read falls back to the disk", async () => {
    const h = harness(root);
    const file = path.join(root, "env.txt");
    fs.writeFileSync(file, "disk\n");
    const buffers = new Map([[file, "buffer line\n"]]);
    const writes: Array<[string, string]> = [];
    h.ctx.environment = {
      readTextFile: async (p) => {
        const text = buffers.get(p);
        if (text === undefined) throw new Error("not open");
        return text;
      },
      writeTextFile: async (p, content) => {
        writes.push([p, content]);
        buffers.set(p, content);
      },
    };
    assert.match((await run(readFileTool, { path: "env.txt" }, h)).output, /buffer line/);
    fs.writeFileSync(path.join(root, "only-disk.txt"), "from disk\n");
    assert.match((await run(readFileTool, { path: "only-disk.txt" }, h)).output, /from disk/);

    assert.equal((await run(editTool, { path: "env.txt", oldString: "buffer", newString: "edited" }, h)).isError, undefined);
    assert.deepEqual(writes.at(-1), [file, "edited line\n"]);
    assert.deepEqual(h.changes.at(-1), { path: file, before: "buffer line\n", after: "edited line\n" });
    assert.equal(fs.readFileSync(file, "utf8"), "disk\n", "the disk is untouched");

    await run(writeFileTool, { path: "new/env2.txt", content: "x" }, h);
    assert.deepEqual(writes.at(-1), [path.join(root, "new/env2.txt"), "x"]);
    assert.equal(fs.existsSync(path.join(root, "new")), false);
    // Paths are still confined to the workspace.
    assert.equal((await run(readFileTool, { path: "../outside/secret.txt" }, h)).isError, true);
  });

  it("bash runs through its runCommand and records the output", async () => {
    const h = harness(root);
    const seen: Array<{ callId: string; command: string; cwd: string }> = [];
    h.ctx.environment = {
      runCommand: async ({ callId, command, cwd }) => {
        seen.push({ callId, command, cwd });
        return { output: "remote output\n", exitCode: 3 };
      },
    };
    const result = await run(bashTool, { command: "make" }, h);
    assert.deepEqual(seen, [{ callId: "call_test", command: "make", cwd: h.ctx.workspace.root }]);
    assert.equal(result.exitCode, 3);
    assert.equal(result.isError, true);
    assert.match(result.output, /remote output\nexit code 3/);
    assert.equal(h.chunks.map((c) => c.chunk).join(""), "remote output\n");
  });
});
