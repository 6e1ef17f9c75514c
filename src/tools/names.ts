// The names of the tools a server's runtime has, in its registry's order (server-runtime.ts
// builds the registry): for answers given before the runtime and the tools' code have loaded,
// such as the claude dialect's initialize. test/e2e/claude.test.ts holds the list to the runtime's
// (the early answer's skills against skills/list).
export const SERVER_TOOL_NAMES: readonly string[] = [
  "read_file",
  "list_files",
  "glob",
  "search_files",
  "write_file",
  "edit",
  "bash",
  "update_plan",
  "ask_user",
  "load_skill",
  "schedule_prompt",
  "run_subagent",
];
