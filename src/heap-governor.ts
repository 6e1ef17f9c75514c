// Keeps a streaming server's heap close to what is live.
//
// V8 collects its old generation lazily: with about 20 MB live it lets garbage pile up to three
// or four times that before a full collection. A server streaming a long turn promotes a few
// hundred bytes per delta (whatever is in flight when a young-generation collection runs: events
// between append and commit, lines waiting for the pipe, the SDK's parse buffers), so a
// 200,000-delta turn would grow the process by 50–80 MB of garbage, which the system never gets
// back. The governor runs a full collection itself once the old generation has grown a fixed
// budget past what the previous one left: a few collections of 10–20 ms over such a turn.
//
// It also sizes the young generation. Once start-up is done, the young generation keeps its size
// (8 MB) instead of doubling under a long turn's allocation: 16–24 MB less, for about 15% more
// time per delta in young-generation collections. But with many turns streaming at once (a
// cluster node, many sessions) each collection finds that many more streams' data in flight:
// it copies it, promotes it, and the promoted garbage brings full collections. There the young
// generation may grow as V8 would have it (to 32 MB): a cluster node streaming 67 turns spent
// about a fifth less CPU. Memory then follows the load.
//
// The first turn's preparation ends with a full collection when no turn runs yet: loading the
// runtime and the model SDK leaves garbage, and V8's first full collection otherwise fell in the
// first turn (10–15 ms of a Responses or Chat Completions first turn after a pause).
import v8 from "node:v8";
import vm from "node:vm";

/** Called without options: a full, synchronous collection (Node 20 ignores `{type: "major"}`). */
type CollectGarbage = () => void;

/** Growth of the old generation over the last collection's live size that triggers one. */
const BUDGET_BYTES = 8 * 1024 * 1024;
const CHECK_INTERVAL_MS = 250;
/** Turns streaming at once from which the young generation may grow. */
const CONCURRENT_TURNS_TO_GROW = 4;

export interface HeapGovernor {
  /**
   * What the first turn needs is loaded: from now on the young generation grows only while many
   * turns run at once. (With it this small while modules load, a first turn took 15 ms longer.)
   */
  startupDone(): void;
  /** A full collection now, unless a turn is running. */
  collectUnlessBusy(): void;
}

/** Starts the governor for the life of the process; `runningTurns` counts the turns running now. */
export function startHeapGovernor(runningTurns: () => number): HeapGovernor {
  let collect: CollectGarbage | undefined;
  let live = oldGenerationUsed();
  let started = false;
  let growing = true; // V8's default
  // V8 reads the growth factor at each growth decision, so it can change at run time.
  const sizeYoungGeneration = (): void => {
    const grow = runningTurns() >= CONCURRENT_TURNS_TO_GROW;
    if (grow === growing) return;
    growing = grow;
    v8.setFlagsFromString(`--semi-space-growth-factor=${grow ? 2 : 1}`);
  };
  const collectNow = (): void => {
    // The function is made on first use: it costs a V8 context.
    (collect ??= collector())();
    live = oldGenerationUsed();
  };
  setInterval(() => {
    if (started) sizeYoungGeneration();
    // A large live heap gets proportionally more room, so collections stay rare where they cost most.
    if (oldGenerationUsed() >= live + Math.max(BUDGET_BYTES, live / 2)) collectNow();
  }, CHECK_INTERVAL_MS).unref();
  return {
    startupDone() {
      started = true;
      sizeYoungGeneration();
    },
    collectUnlessBusy() {
      if (runningTurns() === 0) collectNow();
    },
  };
}

/**
 * The heap in use outside the young generation (V8's "new_space" and "new_large_object_space"):
 * the young generation fills up to its whole size between two of its own collections, which says
 * nothing about garbage piling up.
 */
const oldGenerationUsed = (): number =>
  v8.getHeapSpaceStatistics().reduce((used, space) => (space.space_name.startsWith("new_") ? used : used + space.space_used_size), 0);

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
