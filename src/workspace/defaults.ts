// A workspace's defaults for its threads (workspace/config/update): the provider and model of
// threads that name none, and the approval policy of threads that set none. Kept in
// `.craft/config.json` (`provider`, `model`, `defaultApprovalPolicy`); a thread's own
// configuration always wins.
import { RuntimeError } from "../domain/errors.js";
import type { ApprovalPolicy } from "../domain/model.js";
import type { ConfigChanges } from "./changes.js";
import { readSettings, updateSettings } from "./settings.js";

export interface WorkspaceDefaultValues {
  provider?: string;
  model?: string;
  defaultApprovalPolicy?: Extract<ApprovalPolicy, "default" | "autoApprove">;
}

/** A change: a value sets, null removes, undefined leaves alone. */
export type WorkspaceDefaultsChange = { [K in keyof WorkspaceDefaultValues]?: WorkspaceDefaultValues[K] | null };

const KEYS = ["provider", "model", "defaultApprovalPolicy"] as const;
const REGION: Record<(typeof KEYS)[number], string> = {
  provider: "workspace.provider",
  model: "workspace.model",
  defaultApprovalPolicy: "workspace.defaultApprovalPolicy",
};

export class WorkspaceDefaults {
  constructor(private readonly changes: ConfigChanges) {}

  /** The workspace's defaults; {} when it sets none (or its settings cannot be read). */
  read(workspacePath: string): WorkspaceDefaultValues {
    let settings: Record<string, unknown>;
    try {
      settings = readSettings(workspacePath);
    } catch {
      return {};
    }
    const values: WorkspaceDefaultValues = {};
    if (typeof settings.provider === "string" && settings.provider) values.provider = settings.provider;
    if (typeof settings.model === "string" && settings.model && settings.model !== "Default") values.model = settings.model;
    if (settings.defaultApprovalPolicy === "default" || settings.defaultApprovalPolicy === "autoApprove")
      values.defaultApprovalPolicy = settings.defaultApprovalPolicy;
    return values;
  }

  update(workspacePath: string, change: WorkspaceDefaultsChange): WorkspaceDefaultValues {
    const given = KEYS.filter((key) => change[key] !== undefined);
    if (given.length === 0) throw new RuntimeError("invalidInput", `Give at least one of ${KEYS.join(", ")}.`);
    updateSettings(workspacePath, (settings) => {
      for (const key of given) {
        const value = change[key];
        if (value === null || value === "" || (key === "model" && value === "Default")) delete settings[key];
        else settings[key] = value;
      }
    });
    this.changes.announce(
      workspacePath,
      "workspace/config/update",
      given.map((key) => REGION[key]),
    );
    return this.read(workspacePath);
  }
}
