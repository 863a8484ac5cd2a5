/**
 * Sizes and time caps of every workload, full and `--quick` (CI: a few hundred runs each, seconds each).
 * Full sizes follow issue #7: drain 50,000 runs; steady 500 runs/s for 60 s; burst 20,000 runs due in one second;
 * registration 15 s of autocannon; scale with 0, 1 M and 10 M future runs; a receiver answering in 200 ms; noisy:
 * tenant A's 30,000 runs due at once over 16 destinations while tenant B's 200 runs fall due during their drain.
 */
import type { SystemId, SystemSpec } from '../systems/types.ts';

export const WORKLOADS = ['drain', 'steady', 'burst', 'registration', 'scale', 'slow', 'noisy'] as const;
export type WorkloadId = (typeof WORKLOADS)[number];

export type Plan = {
  quick: boolean;
  drain: { n: number };
  /** `ratePerSecond` runs fall due each second for `durationS`; registration ends at least `minLeadMs` before. */
  steady: { ratePerSecond: number; durationS: number; minLeadMs: number };
  /** `n` runs due within one second. */
  burst: { n: number; minLeadMs: number };
  /** autocannon `durationS` with `connections`; `batches` batch requests of 1,000 jobs. */
  registration: { durationS: number; connections: number; batches: number };
  /** A drain of `n` runs with each number of future runs in the table. */
  scale: { n: number; levels: number[] };
  /** A drain of `n` runs against a receiver that answers after `delayMs`. */
  slow: { n: number; delayMs: number };
  /** Noisy neighbour (workloads/noisy.ts). */
  noisy: NoisyPlan;
  /** Longest a delivery workload may take after its runs are due, in ms. */
  capMs: number;
  /** The same for the peers' out-of-the-box configurations, known to be slow (pg-boss: one job per 2 s poll). */
  defaultsCapMs: number;
  /** Workloads the peers' default configurations run (the others compare Chime with the tuned and same-work peers). */
  defaultsWorkloads: readonly WorkloadId[];
  /** Per-system run counts replacing `drain.n` (quick mode keeps pg-boss's defaults within seconds). */
  drainN: Partial<Record<SystemId, number>>;
};

/**
 * The noisy-neighbour workload: tenant A's `aN` runs, due at once and registered with the worker stopped, go
 * round-robin to `destinations` destinations; tenant B's `bN` runs fall due while the worker drains them, evenly spaced
 * from `bFirstDueMs` after the worker is ready to `bSpanFraction` of A's expected drain time (`aN` ÷
 * `expectedPerSecond`), and at least to 2 × `bFirstDueMs`, at most to half the time cap.
 */
export type NoisyPlan = {
  aN: number;
  destinations: number;
  bN: number;
  bFirstDueMs: number;
  bSpanFraction: number;
  /** A's drain rate (callbacks/s) the plan expects per configuration: the drain workload's figures on 2 vCPU. */
  expectedPerSecond: Record<SystemId, number>;
  /** Also drain A alone (same runs and destinations, no B, a fresh system), the rate A's drain beside B is compared with. */
  baseline: boolean;
};

/** The drain workload's callbacks/s per configuration in test/bench/results.md (2 vCPU, PostgreSQL 15), rounded. */
const EXPECTED_DRAIN_PER_SECOND: Record<SystemId, number> = {
  chime: 7_300,
  pgboss: 0.5,
  'pgboss-tuned': 4_400,
  'pgboss-samework': 3_100,
  graphile: 1_900,
  'graphile-tuned': 14_600,
  'graphile-samework': 5_900,
  // Not in the drain (steady workload only): graphile-worker tuned's figure.
  'graphile-punctual': 14_600,
};

export const FULL_PLAN: Plan = {
  quick: false,
  drain: { n: 50_000 },
  steady: { ratePerSecond: 500, durationS: 60, minLeadMs: 5_000 },
  burst: { n: 20_000, minLeadMs: 5_000 },
  registration: { durationS: 15, connections: 10, batches: 20 },
  scale: { n: 20_000, levels: [0, 1_000_000, 10_000_000] },
  slow: { n: 2_000, delayMs: 200 },
  noisy: {
    aN: 30_000,
    destinations: 16,
    bN: 200,
    bFirstDueMs: 300,
    bSpanFraction: 0.8,
    expectedPerSecond: EXPECTED_DRAIN_PER_SECOND,
    baseline: true,
  },
  capMs: 120_000,
  defaultsCapMs: 40_000,
  defaultsWorkloads: ['drain', 'steady', 'burst', 'slow', 'noisy'],
  drainN: {},
};

export const QUICK_PLAN: Plan = {
  quick: true,
  drain: { n: 300 },
  steady: { ratePerSecond: 100, durationS: 3, minLeadMs: 3_000 },
  burst: { n: 300, minLeadMs: 3_000 },
  registration: { durationS: 2, connections: 10, batches: 2 },
  scale: { n: 300, levels: [0, 20_000] },
  slow: { n: 100, delayMs: 200 },
  noisy: {
    aN: 3_000,
    destinations: 16,
    bN: 50,
    bFirstDueMs: 300,
    bSpanFraction: 0.8,
    expectedPerSecond: EXPECTED_DRAIN_PER_SECOND,
    baseline: true,
  },
  capMs: 60_000,
  defaultsCapMs: 30_000,
  defaultsWorkloads: ['drain'],
  // pg-boss's defaults fetch one job per 2 s poll: 4 runs take ~8 s.
  drainN: { pgboss: 4 },
};

/** The time cap for `spec` under `plan`, in ms. */
export function capFor(plan: Plan, spec: SystemSpec): number {
  return spec.family !== 'chime' && !spec.tuned ? plan.defaultsCapMs : plan.capMs;
}
