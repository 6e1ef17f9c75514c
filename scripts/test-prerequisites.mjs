// Installs what the tests drive besides the repo's own code, unless it is there already:
//  - the real external agents (test/agents/package.json, pinned versions);
//  - Chromium, tmux and PostgreSQL from the system's packages, for the web client's browser tests
//    (Playwright drives the system browser; browser downloads are not used), the Codex terminal
//    UI test and the PostgreSQL store's tests (each starts its own server in a temp dir).
// Tests that need a missing one skip with a message, so an install failure is reported, not fatal.
import { existsSync, readFileSync, readdirSync } from "node:fs";
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

/** Debian keeps PostgreSQL's server programs off PATH, under /usr/lib/postgresql/<version>/bin. */
const hasInitdb = () =>
  onPath("initdb") ||
  (existsSync("/usr/lib/postgresql") && readdirSync("/usr/lib/postgresql").some((v) => existsSync(`/usr/lib/postgresql/${v}/bin/initdb`)));

// System packages: Chromium for the web client's browser tests, tmux to drive the Codex
// terminal UI, PostgreSQL for the PostgreSQL store.
const systemPackages = [
  { name: "chromium", present: () => onPath("chromium"), why: "the browser tests" },
  { name: "tmux", present: () => onPath("tmux"), why: "the Codex terminal UI test" },
  { name: "postgresql", present: hasInitdb, why: "the PostgreSQL store's tests" },
];
const missing = process.env.SWITCHYARD_SKIP_BROWSER_INSTALL ? [] : systemPackages.filter(({ present }) => !present());
if (missing.length === 0) {
  console.log("test system packages: present (or install skipped)");
} else if (process.platform === "linux" && onPath("apt-get") && process.getuid?.() === 0) {
  const names = missing.map(({ name }) => name);
  console.log(`test system packages: installing ${names.join(", ")} from the system's packages`);
  const env = { ...process.env, DEBIAN_FRONTEND: "noninteractive" };
  const apt = (args) => spawnSync("apt-get", args, { stdio: "inherit", env }).status === 0;
  const install = ["install", "-y", "--no-install-recommends", ...names];
  if (!apt(install) && !(apt(["update"]) && apt(install))) {
    console.warn(`test system packages: could not install ${names.join(", ")}; ${missing.map((m) => m.why).join(" and ")} will be skipped`);
  }
} else {
  for (const { name, why } of missing) {
    console.warn(`test system packages: no ${name} and no apt-get as root to install it; ${why} will be skipped`);
  }
}
