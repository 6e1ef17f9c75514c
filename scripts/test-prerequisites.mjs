// Installs what the tests drive besides the repo's own code, unless it is there already:
//  - the real external agents (test/agents/package.json, pinned versions);
//  - Chromium and tmux from the system's packages, for the web client's browser tests (Playwright
//    drives the system browser; browser downloads are not used) and the Codex terminal UI test.
// Tests that need a missing one skip with a message, so an install failure is reported, not fatal.
import { existsSync, readFileSync } from "node:fs";
import { spawnSync } from "node:child_process";

const dir = "test/agents";
const readJson = (file) => JSON.parse(readFileSync(file, "utf8"));
const run = (command, args) => spawnSync(command, args, { stdio: "inherit" }).status === 0;
const onPath = (command) => spawnSync("sh", ["-c", `command -v ${command}`], { stdio: "ignore" }).status === 0;

/** Every pinned agent is installed at its pinned version. */
const agentsCurrent = () =>
  Object.entries(readJson(`${dir}/package.json`).dependencies).every(([name, version]) => {
    const manifest = `${dir}/node_modules/${name}/package.json`;
    return existsSync(manifest) && readJson(manifest).version === version;
  });

if (process.env.SWITCHYARD_SKIP_AGENT_INSTALL) {
  console.log("test agents: install skipped (SWITCHYARD_SKIP_AGENT_INSTALL)");
} else if (agentsCurrent()) {
  console.log("test agents: installed");
} else {
  console.log("test agents: installing Claude Code, Codex and the ACP adapters (pinned in test/agents/package.json)");
  const npm = process.platform === "win32" ? "npm.cmd" : "npm";
  if (!run(npm, ["ci", "--prefix", dir, "--no-audit", "--no-fund", "--loglevel=error"])) {
    console.warn("test agents: install failed; the tests that drive real agents will be skipped");
  }
}

// System packages, by the command each provides: Chromium for the web client's browser tests,
// tmux to drive the Codex terminal UI.
const systemPackages = [
  { command: "chromium", why: "the browser tests" },
  { command: "tmux", why: "the Codex terminal UI test" },
];
const missing = process.env.SWITCHYARD_SKIP_BROWSER_INSTALL ? [] : systemPackages.filter(({ command }) => !onPath(command));
if (missing.length === 0) {
  console.log("test system packages: present (or install skipped)");
} else if (process.platform === "linux" && onPath("apt-get") && process.getuid?.() === 0) {
  const names = missing.map(({ command }) => command);
  console.log(`test system packages: installing ${names.join(", ")} from the system's packages`);
  const env = { ...process.env, DEBIAN_FRONTEND: "noninteractive" };
  const apt = (args) => spawnSync("apt-get", args, { stdio: "inherit", env }).status === 0;
  const install = ["install", "-y", "--no-install-recommends", ...names];
  if (!apt(install) && !(apt(["update"]) && apt(install))) {
    console.warn(`test system packages: could not install ${names.join(", ")}; ${missing.map((m) => m.why).join(" and ")} will be skipped`);
  }
} else {
  for (const { command, why } of missing) {
    console.warn(`test system packages: no ${command} on PATH and no apt-get as root to install it; ${why} will be skipped`);
  }
}
