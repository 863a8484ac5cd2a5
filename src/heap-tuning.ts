/**
 * V8 heap tuning of the processes that run a dispatcher (Node only; the composition root applies it before it opens
 * anything, for `--role dispatcher` and `all`).
 *
 * A dispatcher's per-run objects (a claimed run, its request, its outcome) live tens of ms, long enough that some
 * survive a scavenge and are promoted; they die in the old generation. V8 first collects the old generation only when
 * it reaches its initial limit, then lets it grow by a factor it picks from its GC and mutator speeds (up to 4x the
 * live size), so a draining dispatcher's heap grew far past its live size before a mark-compact. Allowing the old
 * generation to grow by 60 % instead (V8's `--heap-growing-percent`) keeps its RSS lower at the same throughput and CPU
 * per callback. An API-only process keeps V8's default: it holds a batch's objects across the batch's database round
 * trip, and there the lower factor costs CPU. The measurements are in test/bench/README.md ("Measurements behind
 * defaults").
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
