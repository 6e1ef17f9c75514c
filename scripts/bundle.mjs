// Bundles the CLI: loading ~230 modules one by one was most of start-up time. Code that only
// some commands or turns need (WebSocket, doctor, schema export, the external-agent backends,
// the ACP face, the model SDKs) is split into chunks loaded on demand: without splitting,
// esbuild hoists the static imports of such code's external packages (the ACP SDK and its
// schemas) to the top of the bundle, and every start loads them. The model SDKs are bundled
// into their chunks: loaded as one file each on the first model call, @anthropic-ai/sdk takes
// ~35 ms instead of ~190 ms from node_modules' hundreds of files, openai ~8 ms instead of ~70.
// The native SQLite binding and the ACP SDK stay external, resolved from node_modules.
import { chmodSync, copyFileSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
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

/** The modules an entry imports statically, its dynamic imports left out: what load with it. */
async function staticGraph(entry) {
  const leaveOut = {
    name: "leave-out-dynamic",
    setup(b) {
      b.onResolve({ filter: /.*/ }, (args) => (args.kind === "dynamic-import" ? { path: args.path, external: true } : undefined));
    },
  };
  const { metafile } = await build({
    entryPoints: [entry],
    bundle: true,
    write: false,
    platform: "node",
    format: "esm",
    external: ["better-sqlite3", "@agentclientprotocol/sdk"],
    plugins: [englishOnlyZod, onDemand, leaveOut],
    metafile: true,
    logLevel: "silent",
  });
  return new Set(Object.keys(metafile.inputs).map((input) => resolve(input)));
}

/**
 * Groups of modules that always load together, each built as one chunk: an entry's static
 * graph. esbuild puts the code shared by each set of entry points (the CLI and every dynamic
 * import) in a chunk of its own, and the ESM loader costs ~0.25 ms a file: what a start loads
 * before its first answer came as 19 files, the runtime as 32 more (a server's first
 * `thread/start` 15–20 ms later than with 3 and 9). So every module that only loads once a
 * group has loaded imports the whole group (which changes nothing when it runs), and all of
 * the group is then shared by the same set of entry points. `without`: entries that load
 * without the group (a worker, commands that never serve, answers given before the runtime is
 * up), which must not pull it in.
 * test/cli/bundle.test.ts holds the file counts.
 */
const GROUPS = [
  { name: "start", entry: "dist/src/cli/main.js", without: ["dist/src/tools/search-worker.js"] },
  {
    name: "runtime",
    entry: "dist/src/server-runtime.js",
    without: [
      "dist/src/cli/program.js",
      "dist/src/cli/db.js",
      "dist/src/cli/yeaft-users.js",
      "dist/src/hub/run.js",
      "dist/src/cli/agentcraft/main.js",
      "dist/src/cli/agentcraft/chat.js",
      "dist/src/cli/agentcraft/proxy.js",
      "dist/src/cli/agentcraft/mcp.js",
      "dist/src/config/providers.js",
      "dist/src/config/file-schema.js",
      "dist/src/tools/search-worker.js",
      // AgentCompany's workspace methods, served while the runtime loads.
      "dist/src/faces/agentcompany/workspace-requests.js",
    ],
  },
];
const groups = [];
for (const group of GROUPS) {
  const entry = resolve(group.entry);
  const members = new Set(
    [...(await staticGraph(group.entry))].filter(
      (file) => file.includes("/dist/src/") && !groups.some((g) => g.members.has(file)) && file !== entry,
    ),
  );
  const without = new Set((await Promise.all(group.without.map((standalone) => staticGraph(standalone)))).flatMap((graph) => [...graph]));
  groups.push({ prelude: `switchyard-${group.name}`, entry, members, without });
}
const oneChunkPerGroup = {
  name: "one-chunk-per-group",
  setup(b) {
    b.onResolve({ filter: /^switchyard-/ }, (args) => ({ path: args.path, namespace: "switchyard-group" }));
    b.onLoad({ filter: /.*/, namespace: "switchyard-group" }, (args) => ({
      contents: [...groups.find((g) => g.prelude === args.path).members].map((file) => `import ${JSON.stringify(file)};`).join("\n"),
      resolveDir: process.cwd(),
    }));
    b.onLoad({ filter: /\/dist\/src\/.*\.js$/ }, (args) => {
      const preludes = [];
      for (const g of groups) {
        if (g.members.has(args.path) || g.entry === args.path) break;
        if (!g.without.has(args.path)) preludes.push(`import "${g.prelude}";`);
      }
      if (preludes.length === 0) return undefined;
      // On the first line, so the source map's lines still hold.
      return { contents: preludes.join("") + readFileSync(args.path, "utf8"), loader: "js", resolveDir: dirname(args.path) };
    });
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
  plugins: [englishOnlyZod, onDemand, oneChunkPerGroup],
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

// The bench's floor for AgentCompany's first answer (bench/agentcompany-floor-child.ts) loads zod
// and YAML as the server does: bundled, zod in English only.
await build({
  entryPoints: ["dist/bench/agentcompany-floor-child.js"],
  outfile: "dist/bench/agentcompany-floor-child.bundle.js",
  bundle: true,
  platform: "node",
  format: "esm",
  target: "node20",
  plugins: [englishOnlyZod],
  banner: { js: REQUIRE_BANNER },
  minify: process.env.SWITCHYARD_BUNDLE_MINIFY !== "0",
  logLevel: "warning",
});

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
