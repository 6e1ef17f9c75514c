// Keeps a streaming server's heap close to what is live.
//
// V8 collects its old generation lazily: with about 20 MB live it lets garbage pile up to three
// or four times that before a full collection. A server streaming a long turn promotes a few
// hundred bytes per delta (whatever is in flight when a young-generation collection runs: events
// between append and commit, lines waiting for the pipe, the SDK's parse buffers), so a
// 200,000-delta turn would grow the process by 50–80 MB of garbage, which the system never gets
// back. The governor runs a full collection itself once the heap has grown a fixed budget past
// what the previous one left: a few collections of 10–20 ms over such a turn. And once start-up
// is done, the young generation stops growing (keepYoungGenerationSize).
import v8 from "node:v8";
import vm from "node:vm";

/** Called without options: a full, synchronous collection (Node 20 ignores `{type: "major"}`). */
type CollectGarbage = () => void;

/** Growth of the used heap over the last collection's live size that triggers one. */
const BUDGET_BYTES = 8 * 1024 * 1024;
const CHECK_INTERVAL_MS = 250;

/** Starts the governor for the life of the process. */
export function startHeapGovernor(): void {
  let collect: CollectGarbage | undefined;
  let live = usedHeap();
  setInterval(() => {
    // A large live heap gets proportionally more room, so collections stay rare where they cost most.
    if (usedHeap() < live + Math.max(BUDGET_BYTES, live / 2)) return;
    // Reached on the first long turn, not at start-up: making the function costs a V8 context.
    (collect ??= collector())();
    live = usedHeap();
  }, CHECK_INTERVAL_MS).unref();
}

/**
 * From now on the young generation keeps its current size instead of doubling under a long
 * turn's allocation (V8 reads this flag at each growth decision): 16 MiB less, for about 15% more
 * time per delta in young-generation collections. Called once what the first turn needs is
 * loaded: with the young generation this small while modules load, a first turn took 15 ms longer.
 */
export function keepYoungGenerationSize(): void {
  v8.setFlagsFromString("--semi-space-growth-factor=1");
}

const usedHeap = (): number => v8.getHeapStatistics().used_heap_size;

/** V8's `gc` function: the global one under --expose-gc, else taken from a fresh context. */
function collector(): CollectGarbage {
  const global = (globalThis as { gc?: CollectGarbage }).gc;
  if (global) return global;
  // The documented way to reach it at run time (Jest's leak detector does the same): the flag
  // applies to contexts created after it is set, and is reset at once for any later ones.
  v8.setFlagsFromString("--expose-gc");
  const gc = vm.runInNewContext("gc") as CollectGarbage;
  v8.setFlagsFromString("--no-expose-gc");
  return gc;
}
