// JSON Schema -> TypeScript type expressions, for the subset zod emits: objects (properties,
// required, additionalProperties), records, arrays and tuples, enum/const, anyOf/oneOf/allOf,
// the primitive types, `$ref`s to `$defs` and `{}` / `{ not: {} }`. Anything else throws, so an
// unsupported schema fails the generator instead of producing a wrong type.
import { refName, type JsonSchema } from "./json-schema.js";

export interface TypeStyle {
  /** How a reference to `$defs/<name>` is written. */
  ref(name: string): string;
  /** Multi-line objects with JSDoc comments (declarations), or everything on one line (docs). */
  multiline: boolean;
  /** How a JSON Schema integer is written (default "number"). */
  integer?: string;
  /** How an object that admits more fields says so (default an index signature, `[key: string]: unknown;`). */
  open?: string;
}

/** Keywords that only annotate or constrain values: no TypeScript equivalent, skipped. */
const IGNORED = new Set([
  "$schema",
  "$id",
  "$comment",
  "title",
  "description",
  "default",
  "examples",
  "deprecated",
  "readOnly",
  "writeOnly",
  "format",
  "pattern",
  "minLength",
  "maxLength",
  "minimum",
  "maximum",
  "exclusiveMinimum",
  "exclusiveMaximum",
  "multipleOf",
  "minItems",
  "maxItems",
  "uniqueItems",
  "minProperties",
  "maxProperties",
  "contentEncoding",
  "contentMediaType",
]);
const HANDLED = new Set([
  "$ref",
  "anyOf",
  "oneOf",
  "allOf",
  "not",
  "const",
  "enum",
  "type",
  "properties",
  "required",
  "additionalProperties",
  "propertyNames",
  "items",
  "prefixItems",
]);

export function renderType(schema: unknown, style: TypeStyle, indent = "", where = "schema"): string {
  if (schema === true) return "unknown";
  if (schema === false) return "never";
  if (schema === null || typeof schema !== "object" || Array.isArray(schema)) throw new Error(`${where}: not a schema`);
  const s = schema as JsonSchema;
  for (const key of Object.keys(s)) {
    if (!IGNORED.has(key) && !HANDLED.has(key)) throw new Error(`${where}: unsupported JSON Schema keyword "${key}"`);
  }
  const at = (key: string): string => `${where}.${key}`;

  if (s.$ref !== undefined) {
    only(s, ["$ref"], where);
    return style.ref(refName(s.$ref));
  }
  if (s.anyOf !== undefined || s.oneOf !== undefined) {
    const key = s.anyOf !== undefined ? "anyOf" : "oneOf";
    only(s, [key], where);
    return union(
      list(s[key], at(key)).map((member, i) => renderType(member, style, indent, `${at(key)}[${i}]`)),
      indent,
      style,
    );
  }
  if (s.allOf !== undefined) {
    only(s, ["allOf"], where);
    const members = list(s.allOf, at("allOf")).map((member, i) => renderType(member, style, indent, `${at("allOf")}[${i}]`));
    return members.map((m) => (isUnion(m) ? `(${m})` : m)).join(" & ");
  }
  if (s.not !== undefined) {
    only(s, ["not"], where);
    if (isEmptySchema(s.not)) return "never";
    throw new Error(`${where}: "not" is only supported as { not: {} }`);
  }
  if (s.const !== undefined) return literal(s.const, where);
  if (s.enum !== undefined)
    return union(
      list(s.enum, at("enum")).map((value) => literal(value, where)),
      indent,
      style,
    );

  const type = s.type;
  if (Array.isArray(type)) {
    return union(
      type.map((t: unknown) => renderType({ ...s, type: t }, style, indent, where)),
      indent,
      style,
    );
  }
  switch (type) {
    case undefined:
      only(s, [], where);
      return "unknown";
    case "string":
      return "string";
    case "number":
      return "number";
    case "integer":
      return style.integer ?? "number";
    case "boolean":
      return "boolean";
    case "null":
      return "null";
    case "array":
      return arrayType(s, style, indent, where);
    case "object":
      return objectType(s, style, indent, where);
    default:
      throw new Error(`${where}: unsupported type ${JSON.stringify(type)}`);
  }
}

/** Whether a schema is an object with named properties (declared as an interface). */
export function isPlainObject(schema: JsonSchema): boolean {
  return (
    schema.type === "object" &&
    typeof schema.properties === "object" &&
    schema.properties !== null &&
    Object.keys(schema.properties).length > 0
  );
}

export interface Field {
  name: string;
  optional: boolean;
  schema: JsonSchema;
  description?: string;
}

/** The named properties of an object schema, in declaration order. */
export function fieldsOf(schema: JsonSchema): Field[] {
  const properties = (schema.properties ?? {}) as Record<string, JsonSchema>;
  const required = new Set((schema.required ?? []) as string[]);
  return Object.entries(properties).map(([name, property]) => ({
    name,
    optional: !required.has(name),
    schema: property,
    ...(typeof property.description === "string" ? { description: property.description } : {}),
  }));
}

/** Whether an object schema admits fields beyond its named ones (zod's passthrough/loose objects). */
export function isOpen(schema: JsonSchema): boolean {
  const extra = schema.additionalProperties;
  return extra !== undefined && extra !== false;
}

export function propertyKey(name: string): string {
  return /^[A-Za-z_$][\w$]*$/.test(name) ? name : JSON.stringify(name);
}

/** A type after `:` or `=`: a space, or nothing when it starts on its own line (multi-line unions). */
export function spaced(type: string): string {
  return type.startsWith("\n") ? type : ` ${type}`;
}

/** A JSDoc comment, or nothing when there is no text. */
export function jsDoc(text: string | undefined, indent: string): string {
  if (!text) return "";
  const lines = text.replace(/\*\//g, "*\\/").split("\n");
  if (lines.length === 1) return `${indent}/** ${lines[0]} */\n`;
  return `${indent}/**\n${lines.map((line) => `${indent} *${line ? ` ${line}` : ""}`).join("\n")}\n${indent} */\n`;
}

function objectType(s: JsonSchema, style: TypeStyle, indent: string, where: string): string {
  if (
    s.propertyNames !== undefined &&
    !(isObject(s.propertyNames) && s.propertyNames.type === "string" && Object.keys(s.propertyNames).length === 1)
  ) {
    throw new Error(`${where}: only string propertyNames are supported`);
  }
  const fields = fieldsOf(s);
  const extra = s.additionalProperties;
  if (fields.length === 0) {
    if (extra === undefined) return "{}";
    if (extra === false) return "Record<string, never>";
    return `Record<string, ${renderType(extra, style, indent, `${where}.additionalProperties`)}>`;
  }
  const inner = `${indent}  `;
  const members = fields.map((field) => {
    const type = renderType(field.schema, style, inner, `${where}.properties.${field.name}`);
    const doc = style.multiline ? jsDoc(field.description, inner) : "";
    return `${doc}${style.multiline ? inner : ""}${propertyKey(field.name)}${field.optional ? "?" : ""}:${spaced(type)};`;
  });
  if (isOpen(s)) {
    // Named properties must fit the index signature, so anything but `unknown` is not expressible.
    const type = renderType(extra, style, inner, `${where}.additionalProperties`);
    if (type !== "unknown") throw new Error(`${where}: additionalProperties beside properties must be {}`);
    members.push(`${style.multiline ? inner : ""}${style.open ?? "[key: string]: unknown;"}`);
  }
  if (style.multiline) return `{\n${members.join("\n")}\n${indent}}`;
  return `{ ${members.join(" ").replace(/;$/, "")} }`;
}

function arrayType(s: JsonSchema, style: TypeStyle, indent: string, where: string): string {
  if (s.prefixItems !== undefined) {
    const items = list(s.prefixItems, `${where}.prefixItems`).map((item, i) =>
      renderType(item, style, indent, `${where}.prefixItems[${i}]`),
    );
    if (s.items !== undefined && s.items !== false) items.push(`...${arrayOf(renderType(s.items, style, indent, `${where}.items`))}`);
    return `[${items.join(", ")}]`;
  }
  return arrayOf(s.items === undefined ? "unknown" : renderType(s.items, style, indent, `${where}.items`));
}

function arrayOf(element: string): string {
  // Control characters can only appear escaped inside a string literal type: still one token.
  // eslint-disable-next-line no-control-regex
  return /^[\w$."\u0000-\u001f]+$/.test(element) ? `${element}[]` : `Array<${element}>`;
}

function union(members: string[], indent: string, style: TypeStyle): string {
  const unique = [...new Set(members)];
  if (unique.length === 1) return unique[0]!;
  if (style.multiline && unique.some((m) => m.includes("\n"))) {
    // Prettier's layout: one member per line, each object indented under its bar.
    return unique.map((m) => `\n${indent}  | ${reindent(m, `${indent}    `, indent)}`).join("");
  }
  return unique.join(" | ");
}

/** Re-bases a multi-line member rendered at `from` onto `to`. */
function reindent(text: string, to: string, from: string): string {
  return text
    .split("\n")
    .map((line, i) => (i === 0 ? line : `${to}${line.startsWith(from) ? line.slice(from.length) : line}`))
    .join("\n");
}

function isUnion(type: string): boolean {
  let depth = 0;
  for (const ch of type) {
    if ("{[(<".includes(ch)) depth++;
    else if ("}])>".includes(ch)) depth--;
    else if (ch === "|" && depth === 0) return true;
  }
  return false;
}

function literal(value: unknown, where: string): string {
  if (value === null || ["string", "number", "boolean"].includes(typeof value)) return JSON.stringify(value);
  throw new Error(`${where}: unsupported literal ${JSON.stringify(value)}`);
}

function list(value: unknown, where: string): unknown[] {
  if (!Array.isArray(value)) throw new Error(`${where}: expected an array`);
  return value;
}

function only(s: JsonSchema, allowed: string[], where: string): void {
  for (const key of Object.keys(s)) {
    if (!IGNORED.has(key) && !allowed.includes(key))
      throw new Error(`${where}: "${key}" is not supported beside ${allowed.join(", ") || "nothing"}`);
  }
}

function isObject(value: unknown): value is JsonSchema {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

function isEmptySchema(value: unknown): boolean {
  return value === true || (isObject(value) && Object.keys(value).length === 0);
}
