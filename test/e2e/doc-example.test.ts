// The AppServer document's Node client example runs against Switchyard unmodified, spawning
// `dotcraft app-server` from PATH.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { it } from "node:test";
import { FakeModelServer } from "../support/fake-model-server.js";
import { makeWorkspace, modelEnv } from "../support/harness.js";
import { CLI_PATH, tempDir } from "../support/server-process.js";

it("the document's minimal Node client completes a turn", async () => {
  const fake = await FakeModelServer.start();
  fake.enqueue({ kind: "response", text: ["This repository ", "holds a README."] });
  // What `npm install -g switchyard` puts on PATH: a `dotcraft` command running the CLI.
  const bin = tempDir("bin");
  fs.writeFileSync(path.join(bin, "dotcraft"), `#!/bin/sh\nexec "${process.execPath}" "${CLI_PATH}" "$@"\n`, { mode: 0o755 });
  const workspace = makeWorkspace({ "README.md": "# Demo\n" });
  const example = spawn(process.execPath, [fileURLToPath(new URL("../support/doc-client-example.js", import.meta.url))], {
    cwd: workspace,
    env: { ...process.env, ...modelEnv(fake), PATH: `${bin}${path.delimiter}${process.env.PATH}`, SWITCHYARD_HOME: tempDir("home") },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  try {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no turn/completed; output:\n${output}`)), 15_000);
      example.stdout.setEncoding("utf8");
      example.stdout.on("data", (chunk: string) => {
        output += chunk;
        if (output.includes("'turn/completed'")) {
          clearTimeout(timer);
          resolve();
        }
      });
      example.once("exit", (code) => reject(new Error(`example exited with ${code}:\n${output}`)));
    });
    assert.match(output, /method: 'item\/agentMessage\/delta'/);
    assert.match(output, /holds a README\./);
    assert.doesNotMatch(output, /error:/);
  } finally {
    example.kill();
    await fake.close();
  }
});
