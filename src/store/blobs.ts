// Large inline images are kept once, by content: a base64 `data:` URL of 4 KiB or more in the
// JSON the store writes (events and their projections) is replaced by a reference to a row of the
// `blobs` table, keyed by the SHA-256 of its bytes, and put back when the JSON is read. A thread
// with many screenshots then holds each one once on disk, not once per event that mentions it,
// and nothing above the store sees the difference.
import { createHash } from "node:crypto";
import Database from "better-sqlite3";

export const BLOBS_SCHEMA = `
CREATE TABLE blobs (
  hash       TEXT PRIMARY KEY, -- SHA-256 of data, hex
  media_type TEXT NOT NULL,
  data       BLOB NOT NULL
) WITHOUT ROWID;
`;

const REF_PREFIX = "switchyard-blob:sha256:";
/** Data URLs shorter than this stay inline: a reference saves nothing worth a lookup. */
const MIN_INLINE_BYTES = 4096;
/** A whole JSON string that is a base64 data URL (never an escaped quote inside another string). */
const DATA_URL = new RegExp(`"data:([\\w.+-]+/[\\w.+-]+);base64,([A-Za-z0-9+/]{${MIN_INLINE_BYTES},}={0,2})"`, "g");
const REF = /"switchyard-blob:sha256:([0-9a-f]{64})"/g;

/** SQL for reading a JSON column with its references resolved; JS runs only for rows that have one. */
export const hydrated = (column: string): string =>
  `CASE WHEN instr(${column}, '"${REF_PREFIX}') > 0 THEN blob_hydrate(${column}) ELSE ${column} END`;

type Blob = { media_type: string; data: Buffer };

export class BlobStore {
  private readonly put: Database.Statement<[string, string, Buffer]>;
  /** The read side, opened on the first reference a read meets (most servers never see one). */
  private reader?: { db: Database.Database; get: Database.Statement<[string], Blob> };
  /** An in-memory database's blobs (it has no second connection to read them with). */
  private readonly kept?: Map<string, Blob>;

  /**
   * `file`: the database file, for a second, read-only connection. The SQL function runs while
   * the main connection is in the middle of a query, where that connection cannot run another;
   * blobs are committed with the events that name them, so the reader sees every one a read can
   * meet. Undefined for an in-memory database.
   */
  constructor(
    db: Database.Database,
    private readonly file: string | undefined,
  ) {
    this.put = db.prepare("INSERT OR IGNORE INTO blobs (hash, media_type, data) VALUES (?, ?, ?)");
    if (!file) this.kept = new Map();
    db.function("blob_hydrate", { deterministic: true }, (json: unknown) => (typeof json === "string" ? this.hydrate(json) : json));
  }

  /** Closes the read side; before the main connection, so that the last to close checkpoints the log. */
  close(): void {
    this.reader?.db.close();
  }

  /** `json` with its large data URLs stored and replaced by references. Call inside the write's transaction. */
  dehydrate(json: string): string {
    if (!json.includes('"data:')) return json;
    return json.replace(DATA_URL, (whole, mediaType: string, base64: string) => {
      const bytes = Buffer.from(base64, "base64");
      // Only what reads back identically is replaced (canonical base64).
      if (bytes.toString("base64") !== base64) return whole;
      const hash = createHash("sha256").update(bytes).digest("hex");
      this.put.run(hash, mediaType, bytes);
      this.kept?.set(hash, { media_type: mediaType, data: bytes });
      return `"${REF_PREFIX}${hash}"`;
    });
  }

  /** `json` with its references replaced by the data URLs they stand for. */
  hydrate(json: string): string {
    return json.replace(REF, (whole, hash: string) => {
      const blob = this.kept ? this.kept.get(hash) : this.read(hash);
      return blob ? `"data:${blob.media_type};base64,${blob.data.toString("base64")}"` : whole;
    });
  }

  private read(hash: string): Blob | undefined {
    if (!this.reader) {
      const db = new Database(this.file!, { readonly: true });
      db.pragma("cache_size = -256");
      this.reader = { db, get: db.prepare("SELECT media_type, data FROM blobs WHERE hash = ?") };
    }
    return this.reader.get.get(hash);
  }
}
