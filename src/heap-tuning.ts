/**
 * V8 heap tuning of the processes that run a dispatcher (Node only; the composition root applies it before it opens
 * anything, for `--role dispatcher` and `all`).
 *
 * A dispatcher's per-run objects (a claimed run, its request, its outcome) live tens of ms, long enough that some
 * survive a scavenge and are promoted; they die in the old generation. V8 first collects the old generation only when
 * it reaches its initial limit, then lets it grow by a factor it picks from its GC and mutator speeds (up to 4x the
 * live size), so a draining dispatcher with ~36 MiB live reached ~96 MiB of heap and 191 MiB RSS before a
 * mark-compact (drain benchmark, 50,000 runs, 2 vCPU). With the old generation allowed to grow by 60 % instead
 * (V8's `--heap-growing-percent`), the same drain peaks at 135 MiB RSS, with the same throughput and no more CPU per
 * callback (0.081-0.084 against 0.091-0.099 CPU s per 1,000 callbacks, interleaved runs). 30 % gave the same RSS at
 * a CPU figure no better (0.087-0.104), 100 % 149-151 MiB.
 * An API-only process keeps V8's default: it holds a batch's objects (1,000 jobs parsed, validated, serialised)
 * across the batch's database round trip, and there 60 % cost ~12 % more CPU per batch (226-238 against 258-267
 * ticks for 60 batches, interleaved) for 142 against 200-206 MiB.
 */
import { setFlagsFromString } from 'node:v8';

/** The old generation's growing factor of a dispatcher process, in percent over the live size (V8 `--heap-growing-percent`). */
export const HEAP_GROWING_PERCENT = 60;

const FLAG = /^--heap[-_]growing[-_]percent(=|$)/;

/**
 * Sets V8's `--heap-growing-percent` to HEAP_GROWING_PERCENT unless the process was started with its own value
 * (`node --heap-growing-percent=N …`; V8 reads the flag at each old-generation limit it computes, so setting it
 * at start-up, before the heap has grown, takes effect).
 * @param execArgv the process's node flags (default `process.execArgv`)
 * @returns the flag set, or null when the operator's own value was left in place
 */
export function tuneHeap(execArgv: readonly string[] = process.execArgv): string | null {
  if (execArgv.some((a) => FLAG.test(a))) return null;
  const flag = `--heap-growing-percent=${HEAP_GROWING_PERCENT}`;
  setFlagsFromString(flag);
  return flag;
}
