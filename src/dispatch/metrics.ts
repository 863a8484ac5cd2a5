/**
 * The dispatcher's Prometheus metrics (prom-client). Names follow Prometheus conventions: base units (seconds),
 * `_total` for counters. Registered on the registry passed in, so tests and several dispatchers in one process
 * never collide on the global default registry.
 *
 *   chime_runs_fired_total                      first attempts sent (a run fired)
 *   chime_attempts_total{outcome,error_class}   attempts by what they led to: succeeded|retrying|failed|expired
 *   chime_fire_lag_seconds                      start of a run's first attempt − its scheduled time
 *   chime_claim_duration_seconds                one claim transaction
 *   chime_finish_duration_seconds               one batch of outcomes written
 *   chime_in_flight{destination}                callbacks in flight per destination
 *   chime_destination_limit{destination}        current limit of callbacks in flight per destination (adaptive)
 *   chime_leases_reaped_total                   runs taken back from a dead or stalled dispatcher
 *   chime_runs_pruned_total                     finished runs deleted by retention
 *   chime_due_backlog                           waiting runs already due (read from the database at scrape)
 *   chime_database_up                           1 when that read answered within DATABASE_READ_TIMEOUT_MS, else 0
 */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

export type DispatchMetrics = {
  runsFired: Counter;
  attempts: Counter<'outcome' | 'error_class'>;
  fireLag: Histogram;
  claimDuration: Histogram;
  finishDuration: Histogram;
  /** Read at each scrape from `inFlightSources`: counting at every callback would cost two labelled sets each. */
  inFlight: Gauge<'destination'>;
  /** Callbacks in flight per destination, one source per running dispatcher (added at start, removed at stop). */
  inFlightSources: Set<() => ReadonlyMap<string, number>>;
  /** Read at each scrape from `limitSources`, like `inFlight`. */
  destinationLimit: Gauge<'destination'>;
  /**
   * Each running dispatcher's current limit per destination it holds runs of (so at most as many labels as runs held:
   * src/domain/adaptive-limit.ts); summed over the process's dispatchers, as in-flight is (one in `chime serve`).
   */
  limitSources: Set<() => ReadonlyMap<string, number>>;
  leasesReaped: Counter;
  runsPruned: Counter;
};

/** Seconds: from 1 ms (a timer-woken dispatcher) to 5 minutes (a backlog). */
const LAG_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300];
const DB_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];

/** Creates the dispatcher metrics on `registry`. */
export function createDispatchMetrics(registry: Registry): DispatchMetrics {
  const registers = [registry];
  const inFlightSources = new Set<() => ReadonlyMap<string, number>>();
  const limitSources = new Set<() => ReadonlyMap<string, number>>();
  return {
    runsFired: new Counter({ name: 'chime_runs_fired_total', help: 'Runs whose first attempt was sent.', registers }),
    attempts: new Counter({
      name: 'chime_attempts_total',
      help: 'Attempts by outcome (succeeded, retrying, failed, expired) and error class (empty on success).',
      labelNames: ['outcome', 'error_class'] as const,
      registers,
    }),
    fireLag: new Histogram({
      name: 'chime_fire_lag_seconds',
      help: "Start of a run's first attempt minus its scheduled time, in seconds.",
      buckets: LAG_BUCKETS,
      registers,
    }),
    claimDuration: new Histogram({
      name: 'chime_claim_duration_seconds',
      help: 'Duration of one claim transaction.',
      buckets: DB_BUCKETS,
      registers,
    }),
    finishDuration: new Histogram({
      name: 'chime_finish_duration_seconds',
      help: 'Duration of writing one batch of attempt outcomes.',
      buckets: DB_BUCKETS,
      registers,
    }),
    inFlight: new Gauge({
      name: 'chime_in_flight',
      help: 'Callbacks in flight, per destination (scheme, host and port of the callback URL).',
      labelNames: ['destination'] as const,
      registers,
      collect() {
        this.reset();
        for (const [d, n] of sumBySource(inFlightSources)) this.set({ destination: d }, n);
      },
    }),
    inFlightSources,
    destinationLimit: new Gauge({
      name: 'chime_destination_limit',
      help: 'Current limit of callbacks in flight per destination (adapted to its 429, 503 and timeouts), for destinations with runs held.',
      labelNames: ['destination'] as const,
      registers,
      collect() {
        this.reset();
        for (const [d, n] of sumBySource(limitSources)) this.set({ destination: d }, n);
      },
    }),
    limitSources,
    leasesReaped: new Counter({ name: 'chime_leases_reaped_total', help: 'Runs taken back after their lease expired.', registers }),
    runsPruned: new Counter({ name: 'chime_runs_pruned_total', help: 'Finished runs deleted by retention.', registers }),
  };
}

/** Each destination's figures summed over `sources` (one per dispatcher of the process). */
function sumBySource(sources: Set<() => ReadonlyMap<string, number>>): Map<string, number> {
  const total = new Map<string, number>();
  for (const source of sources) for (const [d, n] of source()) total.set(d, (total.get(d) ?? 0) + n);
  return total;
}

/**
 * How long a scrape waits for the due-backlog read before it reports the database down: well under Prometheus's
 * default 10 s scrape timeout, so a database that hangs (a network partition: connecting alone may take 10 s) shows
 * as `chime_database_up 0` instead of failing the whole scrape, which would read as the process being down.
 */
export const DATABASE_READ_TIMEOUT_MS = 5_000;

/**
 * Registers `chime_due_backlog`, read at each scrape by `count` (e.g. `countDueRuns`), and `chime_database_up`, whether
 * that read answered. A failed read, or one slower than `timeoutMs`, reports a backlog of -1 and the database down
 * rather than failing the scrape, so the other metrics still arrive during a database outage.
 */
export function registerDueBacklog(registry: Registry, count: () => Promise<number>, timeoutMs = DATABASE_READ_TIMEOUT_MS): void {
  // prom-client collects a scrape's metrics concurrently: both gauges await this one read, then the next scrape reads anew.
  let pending: Promise<number> | null = null;
  const read = (): Promise<number> =>
    (pending ??= within(Promise.resolve().then(count), timeoutMs)
      .catch(() => -1)
      .finally(() => {
        pending = null;
      }));
  new Gauge({
    name: 'chime_due_backlog',
    help: 'Waiting runs already due (scheduled or retrying with next_attempt_at <= now); -1 when the database is unreachable.',
    registers: [registry],
    async collect() {
      this.set(await read());
    },
  });
  new Gauge({
    name: 'chime_database_up',
    help: `1 when the database answered this scrape's due-backlog read within ${timeoutMs / 1000} s, else 0.`,
    registers: [registry],
    async collect() {
      this.set((await read()) < 0 ? 0 : 1);
    },
  });
}

/** `promise`, or a rejection once `ms` have passed without it settling. */
function within<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
