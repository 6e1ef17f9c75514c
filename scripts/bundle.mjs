// Bundles the CLI: loading ~230 modules one by one was most of start-up time. Code that only
// some commands or turns need (WebSocket, doctor, schema export, the external-agent backends,
// the ACP face, the model SDKs) is split into chunks loaded on demand: without splitting,
// esbuild hoists the static imports of such code's external packages (the ACP SDK and its
// schemas) to the top of the bundle, and every start loads them. The model SDKs are bundled
// into their chunks: loaded as one file each on the first model call, @anthropic-ai/sdk takes
// ~35 ms instead of ~190 ms from node_modules' hundreds of files, openai ~8 ms instead of ~70.
// The native SQLite binding and the ACP SDK stay external, resolved from node_modules.
import { chmodSync, copyFileSync, readFileSync, writeFileSync } from "node:fs";
import { build } from "esbuild";

/** zod bundles the error messages of ~40 languages; Switchyard reports in English only. */
const englishOnlyZod = {
  name: "english-only-zod",
  setup(b) {
    b.onResolve({ filter: /\/locales\/index\.js$/ }, (args) =>
      args.importer.includes("/zod/") ? { path: "zod-locales", namespace: "switchyard" } : undefined,
    );
    b.onLoad({ filter: /^zod-locales$/, namespace: "switchyard" }, () => ({
      contents: 'export { default as en } from "zod/v4/locales/en.js";',
      resolveDir: process.cwd(),
    }));
  },
};

/**
 * CommonJS packages required on first use rather than at start-up, each a file of its own next
 * to the chunks: bundled into the chunk of the module that requires them, they were compiled on
 * every start. pino on the first log line that passes the level (its 60 kB), yaml for front
 * matter the plain reader does not take and AgentCompany's files (115 kB, ~7 ms).
 */
const ON_DEMAND = { pino: "node_modules/pino/pino.js", yaml: "node_modules/yaml/dist/index.js" };

const onDemand = {
  name: "on-demand",
  setup(b) {
    b.onResolve({ filter: new RegExp(`^(${Object.keys(ON_DEMAND).join("|")})$`) }, (args) =>
      args.kind === "require-call" ? { path: `./${args.path}.cjs`, external: true } : undefined,
    );
  },
};

const REQUIRE_BANNER =
  "import { createRequire as __switchyardRequire } from 'node:module'; const require = __switchyardRequire(import.meta.url);";

const result = await build({
  // search_files runs its regular expressions in a worker, loaded from next to the bundle.
  entryPoints: {
    switchyard: "dist/src/cli/main.js",
    "search-worker": "dist/src/tools/search-worker.js",
  },
  outdir: "dist",
  entryNames: "[name]",
  chunkNames: "chunks/[name]-[hash]",
  bundle: true,
  splitting: true,
  platform: "node",
  format: "esm",
  target: "node20",
  external: ["better-sqlite3", "@agentclientprotocol/sdk"],
  plugins: [englishOnlyZod, onDemand],
  // Bundled CommonJS dependencies call require(); give the ES modules one.
  banner: { js: REQUIRE_BANNER },
  minify: process.env.SWITCHYARD_BUNDLE_MINIFY !== "0",
  sourcemap: "linked",
  logLevel: "warning",
  metafile: true,
});

// Most chunks never call require(): creating one per chunk cost start-up ~2 ms. The banner line
// is emptied, not removed, so the source maps' line numbers still hold.
for (const file of Object.keys(result.metafile.outputs).filter((name) => name.endsWith(".js"))) {
  const code = readFileSync(file, "utf8");
  if (code.startsWith(REQUIRE_BANNER) && !/\brequire\b/.test(code.slice(REQUIRE_BANNER.length))) {
    writeFileSync(file, code.slice(REQUIRE_BANNER.length));
  }
}

for (const [name, entry] of Object.entries(ON_DEMAND)) {
  await build({
    entryPoints: [entry],
    outfile: `dist/chunks/${name}.cjs`,
    bundle: true,
    platform: "node",
    format: "cjs",
    target: "node20",
    minify: process.env.SWITCHYARD_BUNDLE_MINIFY !== "0",
    sourcemap: "linked",
    logLevel: "warning",
  });
}

// The Yeaft relay's web client: a browser bundle (preact, marked, DOMPurify, highlight.js) and its
// page, served by the relay from dist/yeaft-web; nothing is fetched from elsewhere at run time.
await build({
  entryPoints: ["src/faces/yeaft/web/app.tsx", "src/faces/yeaft/web/app.css"],
  outdir: "dist/yeaft-web",
  bundle: true,
  platform: "browser",
  format: "esm",
  target: "es2022",
  jsx: "automatic",
  jsxImportSource: "preact",
  minify: process.env.SWITCHYARD_BUNDLE_MINIFY !== "0",
  sourcemap: "linked",
  logLevel: "warning",
});
copyFileSync("src/faces/yeaft/web/index.html", "dist/yeaft-web/index.html");

// `agentcraft` is `switchyard agentcraft`: a second entry point would split the bundle into
// shared chunks and slow every start, so it is a two-line launcher instead.
writeFileSync(
  "dist/agentcraft.js",
  '#!/usr/bin/env node\n// The agentcraft command: switchyard agentcraft.\nprocess.argv.splice(2, 0, "agentcraft");\nawait import("./switchyard.js");\n',
);
chmodSync("dist/agentcraft.js", 0o755);

// `ac` is `switchyard agentcompany` (the AgentCompany protocol's own command name).
writeFileSync(
  "dist/ac.js",
  '#!/usr/bin/env node\n// The ac command: switchyard agentcompany.\nprocess.argv.splice(2, 0, "agentcompany");\nawait import("./switchyard.js");\n',
);
chmodSync("dist/ac.js", 0o755);
