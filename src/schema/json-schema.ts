// A face's protocol table as one JSON Schema (draft 2020-12) document: a `$defs` entry for
// every request's params and result, every notification, every server request and every named
// object, generated with zod's own converter. Shared objects are `$ref`s to their named entry;
// anything else is inlined, so no generated names (`__schema0`) appear.
//
// Direction matters: what the client sends (request params, server-request results) is converted
// as zod's "input" (an unknown field is accepted: the server strips it), what the server sends as
// "output" (exactly the declared fields). A named object that travels both ways and differs
// between the two gets a second entry, `<Name>Input`.
import { z } from "zod";
import type { ProtocolTable } from "../rpc/protocol-table.js";

export type JsonSchema = { [keyword: string]: unknown };
type Io = "input" | "output";

export interface MethodNames {
  method: string;
  description?: string;
  params: string;
  result: string;
}

export interface NotificationNames {
  method: string;
  description?: string;
  params: string;
}

/** The protocol table with the `$defs` name of every schema in it, and the definitions. */
export interface ProtocolModel {
  protocol: ProtocolTable;
  requests: MethodNames[];
  notifications: NotificationNames[];
  serverRequests: MethodNames[];
  /** The named objects, in table order, each followed by its `<Name>Input` entry if it has one. */
  objects: string[];
  /** Every definition by name, sorted by name. */
  defs: Record<string, JsonSchema>;
}

/** `thread/config/update` -> `ThreadConfigUpdate`. */
export function pascalCase(method: string): string {
  return method
    .split(/[/_\-.]/)
    .filter((part) => part.length > 0)
    .map((part) => part[0]!.toUpperCase() + part.slice(1))
    .join("");
}

const DEFS = "#/$defs/";

interface Root {
  name: string;
  io: Io;
  schema: z.ZodType;
  /** Replaces the root's own description (which, if any, is appended). */
  description: string;
}

export function buildModel(protocol: ProtocolTable): ProtocolModel {
  const taken = new Set<string>();
  const claim = (name: string, what: string): string => {
    if (taken.has(name)) throw new Error(`${protocol.name}: two schemas would both be named ${name} (${what})`);
    taken.add(name);
    return name;
  };
  const objectNames = Object.keys(protocol.objects);
  objectNames.forEach((name) => claim(name, `object ${name}`));

  const roots: Root[] = [];
  const root = (name: string, io: Io, schema: z.ZodType, description: string): string => {
    roots.push({ name: claim(name, description), io, schema, description });
    return name;
  };
  const sentence = (text: string | undefined): string => (text ? ` ${text}` : "");
  const requests = Object.entries(protocol.requests).map(([method, spec]): MethodNames => {
    const base = pascalCase(method);
    return {
      method,
      ...(spec.description ? { description: spec.description } : {}),
      params: root(`${base}Params`, "input", spec.params, `Params of the \`${method}\` request.${sentence(spec.description)}`),
      result: root(`${base}Result`, "output", spec.result, `Result of the \`${method}\` request.`),
    };
  });
  const notifications = Object.entries(protocol.notifications).map(([method, schema]): NotificationNames => {
    const description = schema.description;
    return {
      method,
      ...(description ? { description } : {}),
      // The schema's own description is appended by `describeRoot`.
      params: root(`${pascalCase(method)}Notification`, "output", schema, `Params of the \`${method}\` notification.`),
    };
  });
  const serverRequests = Object.entries(protocol.serverRequests).map(([method, spec]): MethodNames => {
    const base = pascalCase(method);
    return {
      method,
      ...(spec.description ? { description: spec.description } : {}),
      params: root(`${base}Params`, "output", spec.params, `Params of the \`${method}\` server request.${sentence(spec.description)}`),
      result: root(`${base}Result`, "input", spec.result, `Result of the \`${method}\` server request: the client's answer.`),
    };
  });

  // One registry holds every schema under its $defs name. Roots are registered as clones, so a
  // schema shared by several methods (or also a named object) gets one entry per method; a clone
  // inherits its original's description.
  const registry = z.registry<{ id: string }>();
  for (const name of objectNames) {
    const schema = protocol.objects[name]!;
    if (registry.has(schema)) throw new Error(`${protocol.name}: object ${name} is the same schema as object ${registry.get(schema)?.id}`);
    registry.add(schema, { id: name });
  }
  for (const r of roots) registry.add(r.schema.clone(), { id: r.name });

  const convert = (io: Io, uri: (id: string) => string): Record<string, JsonSchema> => {
    const { schemas } = z.toJSONSchema(registry, {
      target: "draft-2020-12",
      io,
      reused: "inline",
      cycles: "ref",
      unrepresentable: "throw",
      uri,
    });
    if ("__shared" in schemas) {
      throw new Error(`${protocol.name}: a recursive schema has no name; add it to the protocol's objects`);
    }
    const out: Record<string, JsonSchema> = {};
    for (const [id, schema] of Object.entries(schemas)) {
      const { $schema: _s, $id: _i, ...body } = schema as JsonSchema;
      out[id] = body;
    }
    return out;
  };

  // First pass: both directions with plain refs, to see which objects each direction reaches
  // and which of them convert differently.
  const plain = (id: string): string => `${DEFS}${id}`;
  const probe = { input: convert("input", plain), output: convert("output", plain) };
  const reach = (io: Io): Set<string> => {
    const seen = new Set<string>();
    const visit = (name: string): void => {
      for (const ref of refsOf(probe[io][name])) {
        if (!seen.has(ref)) {
          seen.add(ref);
          visit(ref);
        }
      }
    };
    roots.filter((r) => r.io === io).forEach((r) => visit(r.name));
    return seen;
  };
  const inputUse = reach("input");
  const outputUse = reach("output");
  // An object used both ways needs an input entry if it converts differently, or refers to one that does.
  const needsInput = new Set<string>();
  for (let changed = true; changed;) {
    changed = false;
    for (const name of objectNames) {
      if (needsInput.has(name) || !inputUse.has(name) || !outputUse.has(name)) continue;
      const differs =
        JSON.stringify(probe.input[name]) !== JSON.stringify(probe.output[name]) ||
        refsOf(probe.input[name]).some((ref) => needsInput.has(ref));
      if (differs) {
        needsInput.add(name);
        changed = true;
      }
    }
  }
  const input = convert("input", (id) => (needsInput.has(id) ? `${DEFS}${id}Input` : `${DEFS}${id}`));
  const output = probe.output;

  const defs: Record<string, JsonSchema> = {};
  const objects: string[] = [];
  for (const name of objectNames) {
    // An object only clients send is described as they may send it.
    defs[name] = inputUse.has(name) && !outputUse.has(name) ? input[name]! : output[name]!;
    objects.push(name);
    if (needsInput.has(name)) {
      const variant = claim(`${name}Input`, `input form of ${name}`);
      const own = input[name]!.description;
      defs[variant] = {
        ...input[name]!,
        description: `${name} as a client sends it (unknown fields are ignored).${sentence(typeof own === "string" ? own : undefined)}`,
      };
      objects.push(variant);
    }
  }
  for (const r of roots) {
    const schema = (r.io === "input" ? input : output)[r.name]!;
    const own = typeof schema.description === "string" ? schema.description : undefined;
    defs[r.name] = { description: `${r.description}${sentence(own)}`, ...withoutKey(schema, "description") };
  }
  return { protocol, requests, notifications, serverRequests, objects, defs: sortKeys(defs) };
}

/** The exported document. */
export function jsonSchemaDocument(model: ProtocolModel): JsonSchema {
  const { protocol } = model;
  return {
    $schema: "https://json-schema.org/draft/2020-12/schema",
    title: `Switchyard ${protocol.title ?? protocol.name}`,
    description:
      `Every message of Switchyard's ${protocol.name} face${protocol.source ? `, generated from ${protocol.source}` : ""} by \`switchyard schema\`. ` +
      "$defs: <Method>Params and <Method>Result for each request and server request, <Method>Notification for each notification " +
      "(the method name in PascalCase: thread/start -> ThreadStartParams), and the named objects they refer to.",
    $defs: model.defs,
  };
}

/** The names of the `$defs` entries a schema refers to, in order of appearance. */
export function refsOf(schema: unknown): string[] {
  const refs: string[] = [];
  const walk = (node: unknown): void => {
    if (Array.isArray(node)) node.forEach(walk);
    else if (node !== null && typeof node === "object") {
      for (const [key, value] of Object.entries(node)) {
        if (key === "$ref" && typeof value === "string" && value.startsWith(DEFS)) refs.push(value.slice(DEFS.length));
        else walk(value);
      }
    }
  };
  walk(schema);
  return refs;
}

/** `#/$defs/Name` -> `Name`. */
export function refName(ref: unknown): string {
  if (typeof ref !== "string" || !ref.startsWith(DEFS)) throw new Error(`unsupported $ref ${String(ref)}`);
  return ref.slice(DEFS.length);
}

function withoutKey(schema: JsonSchema, key: string): JsonSchema {
  const { [key]: _dropped, ...rest } = schema;
  return rest;
}

function sortKeys<T>(record: Record<string, T>): Record<string, T> {
  return Object.fromEntries(Object.entries(record).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}
