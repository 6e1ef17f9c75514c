// Lint: typescript-eslint's recommended rules, no import cycles, and the layer order
//   domain <- providers/store/tools/transport/rpc/config <- workspace <- backends <- runtime/automation <- faces <- server/cli/client
// (an arrow points from what is imported to what imports it): a lower layer never imports a higher one.
import js from "@eslint/js";
import tseslint from "typescript-eslint";
import importX from "eslint-plugin-import-x";
import { createTypeScriptImportResolver } from "eslint-import-resolver-typescript";

/** What only the top imports: faces, and what serves them. */
const TOP = ["faces", "cli", "client", "server.ts", "hub"];
/** Each folder under src/ and the folders it must not import from. */
const HIGHER = {
  domain: ["providers", "store", "tools", "transport", "rpc", "config", "workspace", "automation", "backends", "runtime", ...TOP],
  providers: ["store", "tools", "transport", "rpc", "config", "workspace", "automation", "backends", "runtime", ...TOP],
  store: ["tools", "transport", "rpc", "config", "workspace", "automation", "backends", "runtime", ...TOP],
  tools: ["store", "transport", "rpc", "config", "workspace", "automation", "backends", "runtime", ...TOP],
  transport: ["store", "tools", "rpc", "config", "workspace", "automation", "backends", "runtime", ...TOP],
  rpc: ["store", "tools", "config", "workspace", "automation", "backends", "runtime", ...TOP],
  config: ["store", "tools", "transport", "rpc", "workspace", "automation", "runtime", ...TOP],
  workspace: ["store", "transport", "rpc", "backends", "automation", "runtime", ...TOP],
  backends: ["store", "automation", "runtime", ...TOP],
  automation: ["transport", "rpc", ...TOP],
  runtime: ["transport", "rpc", ...TOP],
  schema: ["store", "tools", "transport", "workspace", "automation", "backends", "runtime", ...TOP],
  faces: ["cli", "client", "server.ts", "hub"],
};

export default tseslint.config(
  { ignores: ["dist/**", "node_modules/**", "test/agents/**", "schema/**"] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ["**/*.ts"],
    plugins: { "import-x": importX },
    settings: {
      "import-x/resolver-next": [createTypeScriptImportResolver({ project: "tsconfig.json" })],
      // Without these, import-x cannot parse the files it follows, and no-cycle sees no cycle.
      "import-x/extensions": [".ts", ".js"],
      "import-x/parsers": { "@typescript-eslint/parser": [".ts"] },
    },
    rules: {
      "import-x/no-cycle": ["error", { ignoreExternal: true }],
      "import-x/no-restricted-paths": [
        "error",
        {
          zones: Object.entries(HIGHER).map(([folder, higher]) => ({
            target: `./src/${folder}`,
            from: higher.map((h) => `./src/${h}`),
            message: `src/${folder} is below these layers and must not import them (see CONTRIBUTING.md).`,
          })),
        },
      ],
      // A closure may read a variable that is assigned once, later (connection <-> router).
      "prefer-const": ["error", { ignoreReadBeforeAssign: true }],
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_", caughtErrors: "none" }],
    },
  },
  // Faces hold the runtime's API, never the class: they stay runnable against a remote runtime.
  {
    files: ["src/faces/**/*.ts"],
    rules: {
      "no-restricted-imports": [
        "error",
        { patterns: [{ regex: "runtime/runtime\\.js$", message: "Faces use RuntimeApi (src/runtime/api.ts)." }] },
      ],
    },
  },
  // Tests read wire JSON whose shape is the thing under test.
  { files: ["test/**/*.ts"], rules: { "@typescript-eslint/no-explicit-any": "off" } },
  // Build and test scripts run on Node.
  {
    files: ["**/*.mjs", "**/*.js"],
    languageOptions: { globals: { process: "readonly", console: "readonly", URL: "readonly" } },
  },
);
