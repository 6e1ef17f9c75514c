// The command lines editors spawn are parsed without commander (options.ts); whatever that parser
// takes must come out exactly as commander gives it, and whatever it does not take must be left
// to commander, which explains.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { Command } from "commander";
import {
  ACP_OPTIONS,
  AGENTCOMPANY_OPTIONS,
  APP_SERVER_OPTIONS,
  parseOptions,
  RUNTIME_OPTIONS,
  WEBSOCKET_OPTIONS,
  type OptionSpec,
} from "../../src/cli/options.js";
import { addOptions } from "../../src/cli/program.js";

const APP_SERVER = [APP_SERVER_OPTIONS, RUNTIME_OPTIONS, WEBSOCKET_OPTIONS];
const ACP = [ACP_OPTIONS, RUNTIME_OPTIONS, WEBSOCKET_OPTIONS];
const AGENTCOMPANY = [AGENTCOMPANY_OPTIONS, RUNTIME_OPTIONS, WEBSOCKET_OPTIONS];

function commanderFlags(tables: ReadonlyArray<readonly OptionSpec[]>, args: string[]): Record<string, unknown> {
  const command = new Command().exitOverride().configureOutput({ writeErr: () => {} });
  for (const table of tables) addOptions(table)(command);
  command.parse(args, { from: "user" });
  return command.opts();
}

describe("the commander-free option parser", () => {
  const taken: Array<[string, ReadonlyArray<readonly OptionSpec[]>, string[]]> = [
    ["app-server", APP_SERVER, []],
    ["app-server", APP_SERVER, ["--data-dir", "/tmp/x", "--log-level", "debug"]],
    ["app-server", APP_SERVER, ["--listen", "stdio://", "--listen", "ws://127.0.0.1:0", "--token=s3cret"]],
    ["app-server", APP_SERVER, ["--transport", "ws", "--port", "3284", "--dialect", "claude"]],
    [
      "app-server",
      APP_SERVER,
      ["--max-in-flight", "5", "--ping-interval-ms=100", "--allow-origin", "http://a", "--allow-origin", "http://b"],
    ],
    ["app-server", APP_SERVER, ["--model", "m1", "--model", "m2", "--backend", "acp:agent --flag"]],
    ["acp", ACP, []],
    ["acp", ACP, ["--listen", "ws://127.0.0.1:0", "--approval-timeout-ms", "1000"]],
    ["agentcompany server:start", AGENTCOMPANY, []],
    ["agentcompany server:start", AGENTCOMPANY, ["--listen", "ws://127.0.0.1:0", "--data-dir", "/tmp/x", "--log-level", "warn"]],
  ];
  for (const [name, tables, args] of taken) {
    it(`${name} ${args.join(" ") || "(no options)"}: as commander gives it`, () => {
      const flags = parseOptions(tables, args);
      assert.ok(flags, "the parser took it");
      assert.deepEqual(flags, commanderFlags(tables, args));
    });
  }

  const leftToCommander: string[][] = [
    ["--help"],
    ["-h"],
    ["--bogus"],
    ["positional"],
    // commander's space-separated list form
    ["--listen", "stdio://", "ws://127.0.0.1:0"],
    ["--port", "0"],
    ["--port", "many"],
    ["--transport", "tcp"],
    ["--log-level", "loud"],
    ["--data-dir"],
  ];
  for (const args of leftToCommander) {
    it(`leaves app-server ${args.join(" ")} to commander`, () => {
      assert.equal(parseOptions(APP_SERVER, args), undefined);
    });
  }
});
