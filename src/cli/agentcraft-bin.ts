#!/usr/bin/env node
// The `agentcraft` command: the same as `switchyard agentcraft`.
import { runAgentCraft } from "./agentcraft/main.js";

process.exitCode = await runAgentCraft(process.argv.slice(2));
