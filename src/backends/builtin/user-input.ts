// Turns a user's structured input into the message the model gets: text as text, `fileRef` as
// the file's contents, `image` and `localImage` as image parts. Files are read through the
// workspace (confined to it) and capped in size.
import fs from "node:fs";
import path from "node:path";
import type { InputPart } from "../../domain/model.js";
import type { ConversationMessage, ImageSource, UserContentPart } from "../../providers/provider.js";
import type { Workspace } from "../../tools/workspace.js";
import { inputToText } from "./history.js";

/** The largest image sent (Anthropic's limit per image, and well within OpenAI's). */
export const MAX_IMAGE_BYTES = 5 * 1024 * 1024;
/** The largest file attached by `fileRef`. */
export const MAX_FILE_BYTES = 256 * 1024;

/** Image types every provider takes. */
const IMAGE_TYPES: Record<string, string> = {
  ".png": "image/png",
  ".jpg": "image/jpeg",
  ".jpeg": "image/jpeg",
  ".gif": "image/gif",
  ".webp": "image/webp",
};
const MEDIA_TYPES = new Set(Object.values(IMAGE_TYPES));

type UserMessage = Extract<ConversationMessage, { role: "user" }>;

/** Input the server cannot turn into a model message; the turn fails with `code`. */
export class InputError extends Error {
  constructor(
    readonly code: "invalidInput" | "unsupportedInput",
    message: string,
  ) {
    super(message);
    this.name = "InputError";
  }
}

export interface UserInputOptions {
  workspace: Workspace;
  /** False when the model is known not to take images. */
  images: boolean;
  /** What to do with what cannot be sent: fail (this turn's input) or say so in text (history). */
  onProblem: "fail" | "placeholder";
  /** Names the model in the error for an image it does not take. */
  model: string;
  /** Resolves skillRef and commandRef parts to what they stand for; without it they stay names. */
  refs?: InputRefs;
}

/** What a workspace's skills and custom commands say, for the thread's workspace. */
export interface InputRefs {
  /** The content of an enabled skill; undefined when there is none by that name. */
  skill(name: string): string | undefined;
  /** A custom command's expanded prompt; undefined when there is none by that name. */
  command(name: string, args?: string): string | undefined;
}

/** The user message for an input; throws InputError (onProblem "fail") when part of it cannot be sent. */
export function userMessage(given: InputPart[], options: UserInputOptions): UserMessage {
  const input = options.refs ? given.map((part) => resolveRef(part, options)) : given;
  if (input.every((part) => part.type === "text" || part.type === "commandRef" || part.type === "skillRef")) {
    return { role: "user", content: inputToText(input) };
  }
  const parts: UserContentPart[] = [];
  for (const part of input) {
    try {
      parts.push(toPart(part, options));
    } catch (error) {
      if (!(error instanceof InputError) || options.onProblem === "fail") throw error;
      parts.push({ type: "text", text: `[${inputToText([part]).slice(1, -1)} — not sent: ${error.message}]` });
    }
  }
  const content = parts.map((p) => (p.type === "text" ? p.text : `[image: ${describe(p.source)}]`)).join("\n");
  return { role: "user", content, parts };
}

/** A skillRef as the skill's content, a commandRef as the command's prompt, anything else as is. */
function resolveRef(part: InputPart, options: UserInputOptions): InputPart {
  if (part.type !== "skillRef" && part.type !== "commandRef") return part;
  const text = part.type === "skillRef" ? options.refs?.skill(part.name) : options.refs?.command(part.name, part.args);
  if (text !== undefined) return { type: "text", text: part.type === "skillRef" ? `<skill name="${part.name}">\n${text}\n</skill>` : text };
  const problem = part.type === "skillRef" ? `No enabled skill named "${part.name}".` : `No custom command named "/${part.name}".`;
  if (options.onProblem === "fail") throw new InputError("invalidInput", problem);
  return { type: "text", text: `${inputToText([part])} (${problem})` };
}

function toPart(part: InputPart, options: UserInputOptions): UserContentPart {
  switch (part.type) {
    case "fileRef":
      return { type: "text", text: attachFile(part.path, options.workspace) };
    case "image":
    case "localImage": {
      if (!options.images)
        throw new InputError(
          "unsupportedInput",
          `The model ${options.model} does not take images; choose a model whose model/list entry lists "image" in inputModalities.`,
        );
      const source = part.type === "image" ? remoteImage(part.url) : localImage(part.path, part.mimeType, options.workspace);
      return { type: "image", source };
    }
    default:
      return { type: "text", text: inputToText([part]) };
  }
}

function attachFile(requested: string, workspace: Workspace): string {
  const file = readConfined(requested, workspace, MAX_FILE_BYTES, "file");
  const text = decodeText(file.bytes);
  if (text === undefined)
    throw new InputError("invalidInput", `File "${requested}" is binary; only text files can be attached (send images as localImage).`);
  return `<file path="${workspace.relative(file.path)}">\n${text}\n</file>`;
}

function localImage(requested: string, mimeType: string | undefined, workspace: Workspace): ImageSource {
  const mediaType = mimeType ?? IMAGE_TYPES[path.extname(requested).toLowerCase()];
  if (!mediaType || !MEDIA_TYPES.has(mediaType)) {
    throw new InputError(
      "invalidInput",
      `Image "${requested}" is not PNG, JPEG, GIF or WebP (give mimeType when the file name does not say).`,
    );
  }
  const file = readConfined(requested, workspace, MAX_IMAGE_BYTES, "image");
  return { kind: "base64", mediaType, data: file.bytes.toString("base64") };
}

function remoteImage(url: string): ImageSource {
  if (url.startsWith("data:")) {
    const match = /^data:([^;,]+);base64,(.*)$/s.exec(url);
    if (!match || !MEDIA_TYPES.has(match[1]!))
      throw new InputError("invalidInput", "An image data: URL must be base64 PNG, JPEG, GIF or WebP (data:image/png;base64,...).");
    const data = match[2]!;
    const bytes = Math.floor((data.length * 3) / 4);
    if (bytes > MAX_IMAGE_BYTES)
      throw new InputError("invalidInput", `The image data: URL holds about ${bytes} bytes; the limit is ${MAX_IMAGE_BYTES} bytes.`);
    return { kind: "base64", mediaType: match[1]!, data };
  }
  if (!/^https?:\/\//i.test(url)) throw new InputError("invalidInput", `Image URL "${url}" is neither http(s) nor a data: URL.`);
  return { kind: "url", url };
}

function readConfined(requested: string, workspace: Workspace, limit: number, what: string): { path: string; bytes: Buffer } {
  let resolved: string;
  let size: number;
  try {
    resolved = workspace.resolve(requested);
    const stat = fs.statSync(resolved);
    if (!stat.isFile()) throw new InputError("invalidInput", `"${requested}" is not a file.`);
    size = stat.size;
  } catch (error) {
    if (error instanceof InputError) throw error;
    const reason =
      (error as NodeJS.ErrnoException).code === "ENOENT" ? "does not exist" : error instanceof Error ? error.message : String(error);
    throw new InputError("invalidInput", `Cannot attach ${what} "${requested}": ${reason}`);
  }
  if (size > limit) throw new InputError("invalidInput", `The ${what} "${requested}" is ${size} bytes; the limit is ${limit} bytes.`);
  return { path: resolved, bytes: fs.readFileSync(resolved) };
}

/** The text of UTF-8 bytes, or undefined for binary content (NUL bytes or invalid UTF-8). */
function decodeText(bytes: Buffer): string | undefined {
  if (bytes.includes(0)) return undefined;
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    return undefined;
  }
}

function describe(source: ImageSource): string {
  return source.kind === "url" ? source.url : `${source.mediaType}, ${Math.floor((source.data.length * 3) / 4)} bytes`;
}
