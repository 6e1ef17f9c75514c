// The AgentCraft face's pure parts, in process: restart backoff, template validation, instance
// files, the CLI's output formats and REPL word splitting.
import assert from "node:assert/strict";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { describe, it } from "node:test";
import { splitWords } from "../../../src/cli/agentcraft/main.js";
import { formatList, formatOne } from "../../../src/cli/agentcraft/format.js";
import { Catalog, readTemplateFile } from "../../../src/faces/agentcraft/home.js";
import { Instances } from "../../../src/faces/agentcraft/instances.js";
import { RestartTracker } from "../../../src/faces/agentcraft/process-watch.js";
import { AgentTemplate } from "../../../src/faces/agentcraft/protocol.js";
import { silentLogger } from "../../../src/log.js";
import { tempDir } from "../../support/server-process.js";

describe("RestartTracker", () => {
  it("doubles from 1 s up to 60 s, gives up after 5 restarts, and starts over once stable", () => {
    const tracker = new RestartTracker({ maxRestarts: 5, baseDelayMs: 1_000, maxDelayMs: 3_000, stableAfterMs: 300_000 });
    const t0 = 1_000_000;
    assert.deepEqual(
      [0, 1, 2, 3, 4].map((i) => tracker.next("a", t0 + i)),
      [1_000, 2_000, 3_000, 3_000, 3_000],
    );
    assert.equal(tracker.next("a", t0 + 5), undefined, "no sixth restart");
    tracker.started("a", t0 + 10);
    assert.equal(tracker.next("a", t0 + 10 + 300_000), 1_000, "five stable minutes reset the count");
    assert.equal(tracker.next("b", t0), 1_000, "counted per agent");
  });
});

describe("templates", () => {
  it("reports every problem with its path, and fills defaults", () => {
    const dir = tempDir("tpl");
    const bad = path.join(dir, "bad.json");
    writeFileSync(bad, JSON.stringify({ name: "x", version: "1", backend: { type: "emacs" }, domainContext: { skills: [3] } }));
    const read = readTemplateFile(bad);
    assert.ok("errors" in read);
    assert.deepEqual(read.errors.map((e) => e.path).sort(), ["backend.type", "domainContext.skills.0", "version"]);
    writeFileSync(bad, "{ not json");
    const broken = readTemplateFile(bad);
    assert.ok("errors" in broken && /cannot be read as JSON/.test(broken.errors[0]!.message));
    const minimal = AgentTemplate.parse({ name: "m", version: "0.1.0" });
    assert.equal(minimal.backend.type, "switchyard");
    assert.deepEqual(minimal.domainContext.skills, []);
  });
});

describe("instances", () => {
  const home = tempDir("inst");
  const catalog = new Catalog(path.join(home, "configs"), silentLogger);
  catalog.load();
  const instances = new Instances(path.join(home, "instances"), catalog);
  const tpl = AgentTemplate.parse({ name: "t", version: "1.0.0", domainContext: { mcpServers: [{ name: "fs", command: "mcp-fs" }] } });

  it("writes the metadata atomically and the backend's context files, and updates only what changed", () => {
    const meta = instances.create("one", tpl, { metadata: { team: "a" } });
    assert.equal(meta.status, "created");
    const dir = path.join(home, "instances", "one");
    assert.deepEqual(JSON.parse(readFileSync(path.join(dir, ".mcp.json"), "utf8")), { mcpServers: { fs: { command: "mcp-fs" } } });
    const updated = instances.update("one", { status: "running", pid: 42 });
    assert.equal(updated.pid, 42);
    assert.deepEqual(updated.metadata, { team: "a" });
    assert.equal(instances.update("one", { pid: undefined }).pid, undefined, "an undefined change removes the field");
    assert.ok(!("contextFiles" in instances.get("one")), "bookkeeping stays in the file");
  });

  it("says INSTANCE_CORRUPTED for metadata it cannot read, and AGENT_NOT_FOUND for none", () => {
    instances.create("two", tpl);
    writeFileSync(path.join(home, "instances", "two", ".agentcraft.json"), JSON.stringify({ name: "two" }));
    assert.throws(() => instances.get("two"), { errorCode: "INSTANCE_CORRUPTED" });
    assert.throws(() => instances.get("none"), { errorCode: "AGENT_NOT_FOUND" });
    assert.ok(!instances.list().some((m) => m.name === "two"));
    instances.destroy("two", true);
    assert.ok(!existsSync(path.join(home, "instances", "two")));
  });
});

describe("CLI output", () => {
  const rows = [
    { name: "a", status: "running", pid: 12 },
    { name: "bb", status: "stopped" },
  ];
  it("prints tables with aligned columns, JSON, or names only", () => {
    assert.equal(formatList(rows, ["name", "status", "pid"], "table"), "NAME  STATUS   PID\na     running  12\nbb    stopped  -");
    assert.equal(formatList(rows, ["name"], "quiet"), "a\nbb");
    assert.deepEqual(JSON.parse(formatList(rows, ["name"], "json")), rows);
    assert.equal(formatList([], ["name"], "table"), "(none)");
    assert.equal(formatOne({ name: "a", metadata: { k: "v" } }, "name", "table"), 'name      a\nmetadata  {"k":"v"}');
  });

  it("splits a REPL line into words, honouring quotes", () => {
    assert.deepEqual(splitWords(`agent prompt rev -m "review it now" --format 'json'`), [
      "agent",
      "prompt",
      "rev",
      "-m",
      "review it now",
      "--format",
      "json",
    ]);
  });
});
