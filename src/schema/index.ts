// Exports a face's protocol table: one JSON Schema document, TypeScript declarations printed
// from it, and a Markdown reference page, all deterministic so they can be checked in.
import type { ProtocolTable } from "../rpc/protocol-table.js";
import { buildModel, jsonSchemaDocument } from "./json-schema.js";
import { referencePage, type MarkdownOptions } from "./markdown.js";
import { declarations } from "./typescript.js";

export interface ExportedProtocol {
  /** `<face>.schema.json` */
  jsonSchema: string;
  /** `<face>.d.ts` */
  declarations: string;
  /** `<face>.md` */
  reference: string;
}

export function exportProtocol(protocol: ProtocolTable, options: MarkdownOptions = {}): ExportedProtocol {
  const model = buildModel(protocol);
  return {
    jsonSchema: `${JSON.stringify(jsonSchemaDocument(model), null, 2)}\n`,
    declarations: declarations(model),
    reference: referencePage(model, options),
  };
}
