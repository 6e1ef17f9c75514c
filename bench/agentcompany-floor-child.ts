// AgentCompany's start-up floor, run by run.ts as a process of its own (bundled by
// scripts/bundle.mjs, as the server is): what a new user's first request, `workspace.init`,
// cannot be answered without, in a Node process that does nothing else. zod (params are checked
// against a schema), YAML (the workspace's files are YAML), and the workspace's files written
// durably. Its time over the bare-Node floor is what the request's own work costs at start-up.
import { z } from "zod";
import { initWorkspace } from "../src/faces/agentcompany/workspace.js";

const Params = z.object({
  workspace_dir: z.string().min(1),
  company_name: z.string().min(1).optional(),
  force: z.boolean().optional(),
});

process.stdin.once("data", (data) => {
  const request = JSON.parse(String(data).split("\n")[0]!) as { id: number; params: unknown };
  const { workspace_dir, company_name, force } = Params.parse(request.params);
  const result = initWorkspace(workspace_dir, company_name, force);
  process.stdout.write(`${JSON.stringify({ jsonrpc: "2.0", id: request.id, result })}\n`);
  process.exit(0);
});
