// The scripted provider replays model responses from a JSON file: offline demos, UI work and
// bug reproductions without a model or tokens.
//
// Which script: the model name is the script's path, relative to the server's working
// directory (`--provider scripted --model ./examples/scripted-demo.json`). With no model
// given, SWITCHYARD_SCRIPT names it (what the config file's `scripted.script` sets).
//
//   { "responses": [ { "reasoning": "...", "text": "..." | ["chunk", ...],
//                      "toolCalls": [{ "name": "bash", "arguments": { "command": "ls" } }],
//                      "delayMs": 20, "error": { "status": 429, "message": "..." } }, ... ],
//     "loop": false }
//
// Each model call takes the next response; when the script runs out the model answers
// "(end of script)", or starts over with `"loop": true`. The position is kept per script file
// for the life of the process, so it carries across turns (providers are built per turn).
// The vocabulary is that of the tests' fake model server (text, reasoning, toolCalls, usage,
// stopReason), so a scenario moves between the two easily.
import fs from "node:fs";
import path from "node:path";
import { z } from "zod";
import { ProviderError, type ModelProvider, type ModelRequest, type ModelStreamEvent } from "./provider.js";
import { abortableSleep } from "./retry.js";
import { toProviderError } from "./sdk-errors.js";

const Text = z.union([z.string(), z.array(z.string())]);

const ResponseSchema = z.strictObject({
  /** A string is streamed word by word; an array is one delta per element. */
  text: Text.optional(),
  reasoning: Text.optional(),
  toolCalls: z
    .array(
      z.strictObject({
        id: z.string().min(1).optional(),
        name: z.string().min(1),
        /** An object is sent as JSON; a string is sent as is (e.g. to script malformed arguments). */
        arguments: z.union([z.record(z.string(), z.unknown()), z.string()]).optional(),
      }),
    )
    .optional(),
  /** Pause between deltas, in ms. Default 20. */
  delayMs: z.number().int().min(0).max(60_000).optional(),
  usage: z.strictObject({ input: z.number().int().min(0), output: z.number().int().min(0) }).optional(),
  /** Default: "toolCalls" when there are tool calls, else "end". */
  stopReason: z.enum(["end", "toolCalls", "maxTokens"]).optional(),
  /** Fail like an API answering with this HTTP status, after any text/reasoning/tool calls above. */
  error: z
    .strictObject({
      status: z.number().int().min(400).max(599),
      message: z.string().optional(),
      retryAfterSeconds: z.number().min(0).optional(),
    })
    .optional(),
});

const ScriptSchema = z.strictObject({
  /** For people reading the file; ignored. */
  description: z.string().optional(),
  responses: z.array(ResponseSchema),
  loop: z.boolean().optional(),
});

export type Script = z.infer<typeof ScriptSchema>;
export type ScriptedResponse = z.infer<typeof ResponseSchema>;

export const END_OF_SCRIPT = "(end of script)";
const DEFAULT_DELAY_MS = 20;

/** Script file (absolute path) -> index of the next response. */
const positions = new Map<string, number>();

export class ScriptError extends Error {
  override name = "ScriptError";
}

/** Reads and validates a script; throws ScriptError naming the file and the JSON path of the problem. */
export function loadScript(file: string): Script {
  let raw: string;
  try {
    raw = fs.readFileSync(path.resolve(file), "utf8");
  } catch (error) {
    throw new ScriptError(`Script ${file} cannot be read: ${(error as Error).message}`);
  }
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch (error) {
    throw new ScriptError(`Script ${file} is not valid JSON: ${(error as Error).message}`);
  }
  const parsed = ScriptSchema.safeParse(value);
  if (!parsed.success) {
    const problems = parsed.error.issues.flatMap((issue) =>
      issue.code === "unrecognized_keys"
        ? issue.keys.map((key) => `${jsonPath([...issue.path, key])}: unknown field`)
        : [`${jsonPath(issue.path) || "(top level)"}: ${issue.message}`],
    );
    throw new ScriptError(`Script ${file} is invalid: ${problems.join("; ")}`);
  }
  return parsed.data;
}

/** `responses[2].toolCalls[0].name` */
function jsonPath(parts: ReadonlyArray<PropertyKey>): string {
  return parts.map((p, i) => (typeof p === "number" ? `[${p}]` : `${i === 0 ? "" : "."}${String(p)}`)).join("");
}

export class ScriptedProvider implements ModelProvider {
  readonly name = "scripted";
  /** The script's path. */
  readonly defaultModel: string;

  constructor(scriptPath: string) {
    this.defaultModel = scriptPath;
  }

  async *stream(request: ModelRequest, signal: AbortSignal): AsyncIterable<ModelStreamEvent> {
    if (signal.aborted) return;
    const file = request.model || this.defaultModel;
    let script: Script;
    try {
      // Read on every call, so an edited script takes effect on the next model call.
      script = loadScript(file);
    } catch (error) {
      throw new ProviderError("noProvider", (error as Error).message);
    }
    const response = nextResponse(path.resolve(file), script);
    const service = `the scripted model (${file})`;
    const delayMs = response.delayMs ?? DEFAULT_DELAY_MS;
    let output = false;
    const pause = async (): Promise<boolean> => {
      if (output && delayMs > 0) await abortableSleep(delayMs, signal);
      return !signal.aborted;
    };

    for (const delta of deltas(response.reasoning)) {
      if (!(await pause())) return;
      output = true;
      yield { type: "reasoningDelta", delta };
    }
    for (const delta of deltas(response.text)) {
      if (!(await pause())) return;
      output = true;
      yield { type: "textDelta", delta };
    }
    const calls = response.toolCalls ?? [];
    for (const [index, call] of calls.entries()) {
      if (!(await pause())) return;
      output = true;
      const argumentsText = typeof call.arguments === "string" ? call.arguments : JSON.stringify(call.arguments ?? {});
      yield { type: "toolCallStart", index, id: call.id ?? `call_scripted_${randomSuffix()}`, name: call.name };
      yield { type: "toolCallDelta", index, argumentsDelta: argumentsText };
    }
    if (response.error) {
      const { status, message, retryAfterSeconds } = response.error;
      throw toProviderError({
        service,
        status,
        ...(message ? { apiMessage: message } : {}),
        ...(retryAfterSeconds !== undefined ? { retryAfterMs: retryAfterSeconds * 1000 } : {}),
        afterOutput: output,
      });
    }
    const outputChars = [
      ...deltas(response.reasoning),
      ...deltas(response.text),
      ...calls.map((c) => JSON.stringify(c.arguments ?? {})),
    ].join("").length;
    const usage = response.usage ?? { input: Math.ceil(JSON.stringify(request.messages).length / 4), output: Math.ceil(outputChars / 4) };
    yield { type: "usage", usage: { inputTokens: usage.input, outputTokens: usage.output } };
    yield { type: "stop", reason: response.stopReason ?? (calls.length > 0 ? "toolCalls" : "end") };
  }
}

/** Takes the script's next response, advancing its position. */
function nextResponse(key: string, script: Script): ScriptedResponse {
  const index = positions.get(key) ?? 0;
  positions.set(key, index + 1);
  const { responses } = script;
  if (index < responses.length) return responses[index]!;
  if (script.loop && responses.length > 0) return responses[index % responses.length]!;
  return { text: END_OF_SCRIPT };
}

/** A string becomes word-sized deltas (each with its trailing space); an array is kept. */
function deltas(text: string | string[] | undefined): string[] {
  if (text === undefined) return [];
  if (Array.isArray(text)) return text.filter((piece) => piece !== "");
  return text.match(/\s*\S+\s*/g) ?? (text ? [text] : []);
}

function randomSuffix(): string {
  return Math.random().toString(36).slice(2, 10);
}
