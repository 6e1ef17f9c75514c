// The tool registry: lookup by name and the JSON Schema specs sent to the model.
import { z } from "zod";
import type { ToolSpec } from "../providers/provider.js";
import type { AnyTool } from "./tool.js";
import { askUserTool } from "./ask-user.js";
import { bashTool } from "./bash.js";
import { editTool } from "./edit.js";
import { globTool } from "./glob.js";
import { listFilesTool } from "./list-files.js";
import { updatePlanTool } from "./plan.js";
import { readFileTool } from "./read-file.js";
import { searchFilesTool } from "./search-files.js";
import { writeFileTool } from "./write-file.js";

export class ToolRegistry {
  private readonly tools = new Map<string, AnyTool>();
  /** Schema generation is not free and the specs go out with every model call. */
  private readonly specCache = new Map<string, ToolSpec>();

  constructor(tools: AnyTool[]) {
    for (const tool of tools) {
      if (this.tools.has(tool.name)) throw new Error(`Duplicate tool name: ${tool.name}`);
      this.tools.set(tool.name, tool);
    }
  }

  get(name: string): AnyTool | undefined {
    return this.tools.get(name);
  }

  list(filter?: (tool: AnyTool) => boolean): AnyTool[] {
    const all = [...this.tools.values()];
    return filter ? all.filter(filter) : all;
  }

  specs(filter?: (tool: AnyTool) => boolean): ToolSpec[] {
    return this.list(filter).map((tool) => {
      let spec = this.specCache.get(tool.name);
      if (!spec) {
        spec = { name: tool.name, description: tool.description, parameters: tool.parameters ?? parametersSchema(tool) };
        this.specCache.set(tool.name, spec);
      }
      return spec;
    });
  }
}

function parametersSchema(tool: AnyTool): Record<string, unknown> {
  // io "input": fields with defaults are optional for the caller, which is what the model fills in.
  const { $schema: _unused, ...schema } = z.toJSONSchema(tool.input, { io: "input" }) as Record<string, unknown>;
  return schema;
}

export function builtinTools(): AnyTool[] {
  return [readFileTool, listFilesTool, globTool, searchFilesTool, writeFileTool, editTool, bashTool, updatePlanTool, askUserTool];
}

/** The built-in tools and `extra` ones that need the server's parts (e.g. load_skill its skills). */
export function createDefaultRegistry(extra: AnyTool[] = []): ToolRegistry {
  return new ToolRegistry([...builtinTools(), ...extra]);
}
