// Records the items of one turn as runtime events (item.started / item.delta / item.completed)
// and remembers which items are still open, so a turn that ends abruptly closes them all.
import { newId } from "../ids.js";
import type { DeltaKind, NewEvent } from "./events.js";
import type { Item, ItemOf, ItemPayloads, ItemType } from "./model.js";

export type Emit = (event: NewEvent) => void;

/** Items whose payload is streamed text. */
type TextItem = Item & { payload: { text: string } };

export class TurnRecorder {
  private readonly open = new Map<string, Item>();
  private readonly texts = new Map<string, TextRope>();

  constructor(
    private readonly emit: Emit,
    readonly threadId: string,
    readonly turnId: string,
  ) {}

  start<T extends ItemType>(type: T, payload: ItemPayloads[T]): ItemOf<T> {
    const item = {
      id: newId("item"),
      threadId: this.threadId,
      turnId: this.turnId,
      type,
      status: "started",
      createdAt: new Date().toISOString(),
      payload,
    } as ItemOf<T>;
    this.open.set(item.id, item as Item);
    this.emit({ type: "item.started", threadId: this.threadId, data: { item: snapshot(item) } });
    return item;
  }

  /** Streams a piece of an open item. The caller keeps the item's payload up to date. */
  delta(item: Item, kind: DeltaKind, delta: string, stream?: "stdout" | "stderr"): void {
    item.status = "streaming";
    this.emit({
      type: "item.delta",
      threadId: this.threadId,
      data: { turnId: this.turnId, itemId: item.id, kind, delta, ...(stream ? { stream } : {}) },
    });
  }

  /** Appends a streamed piece to an open item's text and streams it. */
  appendText(item: TextItem, kind: DeltaKind, delta: string): void {
    let rope = this.texts.get(item.id);
    if (!rope || rope.text !== item.payload.text) this.texts.set(item.id, (rope = new TextRope(item.payload.text)));
    item.payload.text = rope.append(delta);
    this.delta(item, kind, delta);
  }

  complete<T extends ItemType>(item: ItemOf<T>, payload: Partial<ItemPayloads[T]> = {}): ItemOf<T> {
    this.texts.delete(item.id);
    item.payload = { ...item.payload, ...payload };
    item.status = "completed";
    item.completedAt = new Date().toISOString();
    this.open.delete(item.id);
    this.emit({ type: "item.completed", threadId: this.threadId, data: { item: snapshot(item) } });
    return item;
  }

  /** An item that is complete as soon as it exists (user messages, results, notices). */
  record<T extends ItemType>(type: T, payload: ItemPayloads[T]): ItemOf<T> {
    return this.complete(this.start(type, payload));
  }

  /** Completes every item still open, e.g. when the turn is cancelled mid-stream. */
  closeOpen(): void {
    for (const item of [...this.open.values()]) this.complete(item);
  }
}

/**
 * A text built from many small pieces. `a += piece` alone would keep one V8 cons-string node per
 * piece alive until the text is read whole (about 56 bytes for a 5-character delta: 11 MB for a
 * 200,000-delta answer); joining each batch of pieces keeps one node per batch instead.
 */
class TextRope {
  private static readonly BATCH = 256;
  private base: string;
  private batch: string[] = [];

  constructor(public text: string) {
    this.base = text;
  }

  append(piece: string): string {
    this.batch.push(piece);
    if (this.batch.length < TextRope.BATCH) return (this.text += piece);
    this.base = this.text = this.base + this.batch.join("");
    this.batch = [];
    return this.text;
  }
}

/** Events are delivered after commit, so they must not share the payload the engine keeps mutating. */
function snapshot<T extends ItemType>(item: ItemOf<T>): Item {
  return { ...item, payload: { ...item.payload } } as Item;
}
