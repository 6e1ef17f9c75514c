// Bundles the CLI: loading ~230 modules one by one was most of start-up time. Code that only
// some commands need (WebSocket, doctor, schema export) is split into chunks loaded on demand.
// The model SDKs (loaded on the first model call) and the native SQLite binding stay external
// and are resolved from node_modules at run time.
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

await build({
  // search_files runs its regular expressions in a worker, loaded from next to the bundle.
  entryPoints: { switchyard: "dist/src/cli/main.js", "search-worker": "dist/src/tools/search-worker.js" },
  outdir: "dist",
  entryNames: "[name]",
  chunkNames: "chunks/[name]-[hash]",
  bundle: true,
  splitting: false,
  platform: "node",
  format: "esm",
  target: "node20",
  external: ["better-sqlite3", "openai", "@anthropic-ai/sdk", "@agentclientprotocol/sdk"],
  plugins: [englishOnlyZod],
  // Bundled CommonJS dependencies call require(); give the ES modules one.
  banner: {
    js: "import { createRequire as __switchyardRequire } from 'node:module'; const require = __switchyardRequire(import.meta.url);",
  },
  minify: process.env.SWITCHYARD_BUNDLE_MINIFY !== "0",
  sourcemap: "linked",
  logLevel: "warning",
});
