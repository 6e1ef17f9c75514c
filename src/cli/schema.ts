// `switchyard schema --out DIR [--docs DIR]`: writes every face's protocol table as
// DIR/<face>/<face>.schema.json (JSON Schema 2020-12) and DIR/<face>/<face>.d.ts, and with
// --docs the reference pages, DOCS/<face>.md. `npm run schema` regenerates the checked-in copies
// (schema/ and docs/reference/); test/schema.test.ts fails when they are out of date.
import fs from "node:fs";
import path from "node:path";
import { FACES } from "../faces/index.js";
import type { ProtocolTable } from "../rpc/protocol-table.js";
import { exportProtocol } from "../schema/index.js";

/** The protocol table of every face of the registry that declares one, in registry order. */
export async function faceProtocols(): Promise<ProtocolTable[]> {
  const tables = await Promise.all(FACES.map((face) => face.protocol?.()));
  return tables.filter((table): table is ProtocolTable => table !== undefined);
}

export interface SchemaFlags {
  out: string;
  docs?: string;
}

/** Writes the files and returns their paths (as given, joined to the flags' directories). */
export function writeSchemas(flags: SchemaFlags, protocols: readonly ProtocolTable[]): string[] {
  const written: string[] = [];
  const write = (file: string, content: string): void => {
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, content);
    written.push(file);
  };
  for (const protocol of protocols) {
    const dir = path.join(flags.out, protocol.name);
    // The page links to the schema files relative to where it is written.
    const schemaHref = flags.docs === undefined ? undefined : path.relative(flags.docs, dir).split(path.sep).join("/");
    const exported = exportProtocol(protocol, schemaHref === undefined ? {} : { schemaHref });
    write(path.join(dir, `${protocol.name}.schema.json`), exported.jsonSchema);
    write(path.join(dir, `${protocol.name}.d.ts`), exported.declarations);
    if (flags.docs !== undefined) write(path.join(flags.docs, `${protocol.name}.md`), exported.reference);
  }
  return written;
}

export async function runSchema(flags: SchemaFlags, print: (line: string) => void): Promise<number> {
  for (const file of writeSchemas(flags, await faceProtocols())) print(`wrote ${file}`);
  return 0;
}
