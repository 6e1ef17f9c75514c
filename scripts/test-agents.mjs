// Installs the real external agents the backend tests drive (test/agents/package.json, pinned
// versions) unless they are installed already. Their tests skip with a message when they are
// missing, so an install failure is reported, not fatal.
import { existsSync, readFileSync } from "node:fs";
import { spawnSync } from "node:child_process";

const dir = "test/agents";
const readJson = (file) => JSON.parse(readFileSync(file, "utf8"));

/** Every pinned agent is installed at its pinned version. */
const current = () =>
  Object.entries(readJson(`${dir}/package.json`).dependencies).every(([name, version]) => {
    const manifest = `${dir}/node_modules/${name}/package.json`;
    return existsSync(manifest) && readJson(manifest).version === version;
  });

if (process.env.SWITCHYARD_SKIP_AGENT_INSTALL) {
  console.log("test agents: install skipped (SWITCHYARD_SKIP_AGENT_INSTALL)");
} else if (current()) {
  console.log("test agents: installed");
} else {
  console.log("test agents: installing Claude Code, Codex and the ACP adapters (pinned in test/agents/package.json)");
  const npm = process.platform === "win32" ? "npm.cmd" : "npm";
  const result = spawnSync(npm, ["ci", "--prefix", dir, "--no-audit", "--no-fund", "--loglevel=error"], { stdio: "inherit" });
  if (result.status !== 0) console.warn("test agents: install failed; the tests that drive real agents will be skipped");
}
