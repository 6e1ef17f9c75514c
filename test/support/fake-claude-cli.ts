// A stand-in for `claude -p` in stream-json mode, for the claude-code backend's tests. Run it
// with node; it takes the flags the backend passes and speaks the same JSON lines (shapes as
// observed from Claude Code 2.1.x): system init, partial stream events, one assistant message
// per content block, tool results as user messages, `can_use_tool` control requests (obeying
// the answers), `interrupt`, and a `result` per turn.
//
// Scripted through a directory named by FAKE_CLAUDE_DIR:
//   script.json   FakeScript: the turns, consumed in order across processes (so a restart goes on)
//   record.jsonl  what it received, appended: start (argv, resume, model), user, control_response, interrupt
//   sessions/<id> the sessions it knows (created ones; --resume of any other fails like the real CLI)
import { spawnSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import readline from "node:readline";

export type FakeStep =
  | { text: string | string[] }
  | { thinking: string | string[] }
  /**
   * A tool call. `ask` sends can_use_tool first. Bash really runs (bash -c in the cwd); Write and
   * Edit really change the file; any other tool answers `output`.
   */
  | { tool: { id: string; name: string; input: Record<string, unknown>; ask?: boolean; output?: string } }
  /** Exits mid-turn with this code after writing `stderr`. */
  | { crash: { code: number; stderr: string } }
  /** Waits for an interrupt (then ends the turn aborted), or forever when `ignoreInterrupt`. */
  | { hang: { ignoreInterrupt?: boolean } };

export interface FakeTurn {
  steps: FakeStep[];
  usage?: { input: number; output: number; cacheRead?: number; cacheWrite?: number };
  /** This turn's cost; the result reports the session's running total. Default 0.01. */
  cost?: number;
  /** End with an error result carrying this message. */
  error?: string;
}

export interface FakeScript {
  turns: FakeTurn[];
}

export type FakeRecord =
  | { event: "start"; argv: string[]; resume: string | null; model: string | null; cwd: string; pid: number }
  | { event: "user"; message: unknown }
  | { event: "control_response"; response: Record<string, unknown> }
  | { event: "interrupt" };

const REQUIRED = [
  ["-p"],
  ["--input-format", "stream-json"],
  ["--output-format", "stream-json"],
  ["--verbose"],
  ["--permission-prompt-tool", "stdio"],
];

function main(): void {
  const argv = process.argv.slice(2);
  if (argv.includes("--version")) {
    process.stdout.write("2.1.331 (Claude Code)\n");
    return;
  }
  const dir = process.env.FAKE_CLAUDE_DIR;
  if (!dir) {
    process.stderr.write("FAKE_CLAUDE_DIR is not set\n");
    process.exit(2);
  }
  for (const flag of REQUIRED) {
    const at = argv.indexOf(flag[0]!);
    if (at < 0 || (flag[1] !== undefined && argv[at + 1] !== flag[1])) {
      process.stderr.write(`fake claude: missing ${flag.join(" ")}\n`);
      process.exit(2);
    }
  }
  const valueOf = (name: string): string | null => {
    const at = argv.indexOf(name);
    return at >= 0 ? (argv[at + 1] ?? null) : null;
  };
  new FakeClaude(dir, argv, valueOf("--resume"), valueOf("--model"), argv.includes("--include-partial-messages")).run();
}

class FakeClaude {
  private sessionId = "";
  private total = 0;
  private readonly waiting = new Map<string, (response: Record<string, unknown>) => void>();
  private interrupted: (() => void) | undefined;
  private nextRequest = 0;

  constructor(
    private readonly dir: string,
    private readonly argv: string[],
    private readonly resume: string | null,
    private readonly model: string | null,
    private readonly partials: boolean,
  ) {}

  run(): void {
    this.record({ event: "start", argv: this.argv, resume: this.resume, model: this.model, cwd: process.cwd(), pid: process.pid });
    fs.mkdirSync(path.join(this.dir, "sessions"), { recursive: true });
    if (this.resume) {
      const file = path.join(this.dir, "sessions", this.resume);
      if (!fs.existsSync(file)) {
        const error = `No conversation found with session ID: ${this.resume}`;
        this.send({
          type: "result",
          subtype: "error_during_execution",
          is_error: true,
          num_turns: 0,
          session_id: this.resume,
          total_cost_usd: 0,
          errors: [error],
        });
        process.stderr.write(`${error}\n`);
        process.exitCode = 1;
        return;
      }
      this.sessionId = this.resume;
      this.total = Number(fs.readFileSync(file, "utf8")) || 0;
    } else {
      this.sessionId = randomUUID();
      this.saveSession();
    }
    let turns = Promise.resolve();
    readline.createInterface({ input: process.stdin }).on("line", (line) => {
      const message = JSON.parse(line) as Record<string, any>;
      if (message.type === "control_request") {
        const subtype = message.request?.subtype;
        if (subtype === "interrupt") {
          this.record({ event: "interrupt" });
          this.interrupted?.();
        }
        this.send({
          type: "control_response",
          response: { subtype: "success", request_id: message.request_id, response: subtype === "initialize" ? { commands: [] } : {} },
        });
      } else if (message.type === "control_response") {
        this.record({ event: "control_response", response: message.response });
        this.waiting.get(message.response?.request_id)?.(message.response?.response ?? {});
      } else if (message.type === "user") {
        this.record({ event: "user", message });
        turns = turns.then(() => this.turn());
      }
    });
  }

  private async turn(): Promise<void> {
    const turn = this.nextTurn();
    const base = { session_id: this.sessionId };
    this.send({
      type: "system",
      subtype: "init",
      cwd: process.cwd(),
      model: this.model ?? "claude-fake",
      tools: ["Bash", "Edit", "Write", "TodoWrite"],
      ...base,
    });
    let aborted: string | undefined;
    for (const step of turn.steps) {
      if ("text" in step)
        this.block(
          { type: "text", text: "" },
          pieces(step.text).map((text) => ({ type: "text_delta", text })),
          { type: "text", text: pieces(step.text).join("") },
        );
      else if ("thinking" in step) {
        const parts = pieces(step.thinking);
        const deltas = [
          ...parts.map((thinking) => ({ type: "thinking_delta", thinking })),
          { type: "signature_delta", signature: "sig-fake" },
        ];
        this.block({ type: "thinking", thinking: "", signature: "" }, deltas, {
          type: "thinking",
          thinking: parts.join(""),
          signature: "sig-fake",
        });
      } else if ("tool" in step) {
        aborted = await this.tool(step.tool);
        if (aborted) break;
      } else if ("crash" in step) {
        process.stderr.write(step.crash.stderr);
        process.exit(step.crash.code);
      } else if ("hang" in step) {
        await new Promise<void>((resolve) => {
          if (!step.hang.ignoreInterrupt) this.interrupted = resolve;
        });
        this.interrupted = undefined;
        this.send({
          type: "user",
          message: { role: "user", content: [{ type: "text", text: "[Request interrupted by user]" }] },
          parent_tool_use_id: null,
          ...base,
        });
        aborted = "aborted_streaming";
        break;
      }
    }
    const cost = turn.cost ?? 0.01;
    this.total += cost;
    this.saveSession();
    const u = turn.usage ?? { input: 100, output: 10 };
    const usage = {
      input_tokens: u.input,
      output_tokens: u.output,
      cache_read_input_tokens: u.cacheRead ?? 0,
      cache_creation_input_tokens: u.cacheWrite ?? 0,
    };
    const failed = aborted !== undefined || turn.error !== undefined;
    this.send({
      type: "result",
      subtype: failed ? "error_during_execution" : "success",
      is_error: failed,
      ...(turn.error ? { result: turn.error } : {}),
      ...(aborted ? { terminal_reason: aborted, errors: [] } : {}),
      num_turns: 1,
      total_cost_usd: this.total,
      usage,
      ...base,
    });
  }

  /** A tool call; resolves with the reason the turn was aborted, if it was. */
  private async tool(call: {
    id: string;
    name: string;
    input: Record<string, unknown>;
    ask?: boolean;
    output?: string;
  }): Promise<string | undefined> {
    const base = { session_id: this.sessionId, parent_tool_use_id: null };
    const json = JSON.stringify(call.input);
    const half = Math.ceil(json.length / 2);
    this.block(
      { type: "tool_use", id: call.id, name: call.name, input: {} },
      [json.slice(0, half), json.slice(half)].map((partial_json) => ({ type: "input_json_delta", partial_json })),
      {
        type: "tool_use",
        id: call.id,
        name: call.name,
        input: call.input,
      },
    );
    const result = (content: string, isError: boolean, extra: Record<string, unknown> = {}): void =>
      this.send({
        type: "user",
        message: { role: "user", content: [{ type: "tool_result", tool_use_id: call.id, content, is_error: isError }] },
        ...base,
        ...extra,
      });
    if (call.ask) {
      const requestId = `req-${++this.nextRequest}`;
      const answer = new Promise<Record<string, unknown>>((resolve) => this.waiting.set(requestId, resolve));
      this.send({
        type: "control_request",
        request_id: requestId,
        request: { subtype: "can_use_tool", tool_name: call.name, input: call.input, tool_use_id: call.id },
      });
      const response = await answer;
      if (response.behavior !== "allow") {
        if (response.interrupt) {
          result("The user doesn't want to proceed with this tool use.", true, {
            tool_result_meta: [{ id: call.id, non_execution_kind: "user-rejected" }],
          });
          this.send({
            type: "user",
            message: { role: "user", content: [{ type: "text", text: "[Request interrupted by user for tool use]" }] },
            ...base,
          });
          return "aborted_tools";
        }
        result(String(response.message ?? "denied"), true, { tool_result_meta: [{ id: call.id, non_execution_kind: "permission-rule" }] });
        return undefined;
      }
    }
    const file = typeof call.input.file_path === "string" ? path.resolve(call.input.file_path) : "";
    if (call.name === "Bash") {
      const run = spawnSync("bash", ["-c", String(call.input.command)], { encoding: "utf8" });
      const output = [run.stdout, run.stderr].filter(Boolean).join("\n").trimEnd();
      const failed = run.status !== 0;
      result(failed ? `Exit code ${run.status}\n${output}` : output, failed, {
        tool_use_result: { stdout: run.stdout.trimEnd(), stderr: run.stderr.trimEnd(), interrupted: false },
      });
    } else if (call.name === "Write") {
      const before = fs.existsSync(file) ? fs.readFileSync(file, "utf8") : null;
      fs.writeFileSync(file, String(call.input.content));
      result(`File ${before === null ? "created" : "updated"} successfully at: ${file}`, false, {
        tool_use_result: {
          type: before === null ? "create" : "update",
          filePath: file,
          content: call.input.content,
          originalFile: before,
          structuredPatch: [],
        },
      });
    } else if (call.name === "Edit") {
      const before = fs.readFileSync(file, "utf8");
      const after = before.replace(String(call.input.old_string), () => String(call.input.new_string));
      fs.writeFileSync(file, after);
      result(`The file ${file} has been updated successfully.`, false, {
        tool_use_result: {
          filePath: file,
          oldString: call.input.old_string,
          newString: call.input.new_string,
          originalFile: before,
          structuredPatch: [],
        },
      });
    } else {
      result(call.output ?? "ok", false);
    }
    return undefined;
  }

  /** One content block: streamed (with --include-partial-messages), then as an assistant message. */
  private block(start: Record<string, unknown>, deltas: Array<Record<string, unknown>>, complete: Record<string, unknown>): void {
    const base = { session_id: this.sessionId, parent_tool_use_id: null };
    const id = `msg_${randomUUID()}`;
    const event = (e: Record<string, unknown>): void => {
      if (this.partials) this.send({ type: "stream_event", event: e, ...base });
    };
    event({ type: "message_start", message: { id, type: "message", role: "assistant", content: [] } });
    event({ type: "content_block_start", index: 0, content_block: start });
    for (const delta of deltas) event({ type: "content_block_delta", index: 0, delta });
    this.send({ type: "assistant", message: { id, type: "message", role: "assistant", content: [complete] }, ...base });
    event({ type: "content_block_stop", index: 0 });
    event({ type: "message_stop" });
  }

  private nextTurn(): FakeTurn {
    const script = JSON.parse(fs.readFileSync(path.join(this.dir, "script.json"), "utf8")) as FakeScript;
    const counter = path.join(this.dir, "turn-counter");
    const index = fs.existsSync(counter) ? Number(fs.readFileSync(counter, "utf8")) : 0;
    fs.writeFileSync(counter, String(index + 1));
    return script.turns[index] ?? { steps: [{ text: "(no more scripted turns)" }] };
  }

  private saveSession(): void {
    fs.writeFileSync(path.join(this.dir, "sessions", this.sessionId), String(this.total));
  }

  private send(message: Record<string, unknown>): void {
    process.stdout.write(`${JSON.stringify(message)}\n`);
  }

  private record(entry: FakeRecord): void {
    fs.appendFileSync(path.join(this.dir, "record.jsonl"), `${JSON.stringify(entry)}\n`);
  }
}

function pieces(value: string | string[]): string[] {
  if (Array.isArray(value)) return value;
  const size = Math.max(1, Math.ceil(value.length / 3));
  const out: string[] = [];
  for (let i = 0; i < value.length; i += size) out.push(value.slice(i, i + size));
  return out;
}

// Run only as a program (the test imports its types).
if (process.argv[1] && path.resolve(process.argv[1]) === new URL(import.meta.url).pathname) main();
