/**
 * Chains (API.md "Richer schedules"): a job's `then` names jobs of the same tenant to trigger when one of its runs ends
 * `succeeded`, `failed`, or either (`finished`).
 *
 * Cycles: a `then` that makes a chain come back to a job already in it is refused when it is set (`findCycle`, by the
 * API against the tenant's links as stored). Two changes made at the same time may each pass that check and close a
 * cycle together; that cannot make runs trigger each other forever, because a chained run carries the jobs of its
 * chain (`ChainUpstream.chain`) and a link to a job already among them does not fire (src/store/queue/chain-runs.ts):
 * every sequence of chained runs follows a path of distinct jobs.
 */

/** When a link fires: on the upstream run's end status. */
export const CHAIN_ON = ['succeeded', 'failed', 'finished'] as const;
export type ChainOn = (typeof CHAIN_ON)[number];

/** One link of a job's `then`: the job to trigger, and on which end of this job's run. */
export type ChainLink = { jobId: string; on: ChainOn };

/** Most links in one job's `then`. */
export const MAX_CHAIN_LINKS = 10;

/** The run ends a link may fire on: what `finished` means. A run that goes to `retrying` has not ended. */
export const CHAIN_END_STATUSES = ['succeeded', 'failed', 'expired'] as const;
export type ChainEndStatus = (typeof CHAIN_END_STATUSES)[number];

/** Whether a link with `on` fires for a run that ended with `status` (`finished`: any of CHAIN_END_STATUSES). */
export function linkFires(on: ChainOn, status: string): boolean {
  if (on === 'finished') return (CHAIN_END_STATUSES as readonly string[]).includes(status);
  return on === status;
}

/**
 * What a chained run (`trigger = 'chain'`) keeps of the run whose end triggered it (`runs.upstream`): that run's job,
 * id, end status and reported output (an async job's, when it has one), and `chain`, the ids of the jobs of the chain
 * up to and including `jobId`, first upstream first (never sent: it stops a cycle that concurrent changes closed).
 */
export type ChainUpstream = {
  jobId: string;
  runId: string;
  status: ChainEndStatus;
  output?: unknown;
  chain?: string[];
};

/** The upstream as the receiver sees it (payload `upstream`): `chain` left out. */
export function upstreamView(u: ChainUpstream): { jobId: string; runId: string; status: ChainEndStatus; output?: unknown } {
  return { jobId: u.jobId, runId: u.runId, status: u.status, ...(u.output !== undefined ? { output: u.output } : {}) };
}

/**
 * The payload a chained run sends: a JSON object (or no payload) gains `"upstream": { jobId, runId, status, output? }`
 * (replacing a field of that name); any other payload (an array, a string, a number) is sent unchanged.
 */
export function payloadWithUpstream(payload: unknown, upstream: ChainUpstream): unknown {
  if (payload === null || payload === undefined) return { upstream: upstreamView(upstream) };
  if (typeof payload !== 'object' || Array.isArray(payload)) return payload;
  return { ...(payload as Record<string, unknown>), upstream: upstreamView(upstream) };
}

/** The headers of a chained run's request (lower-case names, as the request builder keeps them). */
export function upstreamHeaders(u: ChainUpstream): Record<string, string> {
  return { 'chime-upstream-job-id': u.jobId, 'chime-upstream-run-id': u.runId, 'chime-upstream-status': u.status };
}

/**
 * The first cycle reachable from job `start` once its links are `startLinks` (replacing its stored ones): a path of
 * links from a job back to itself, found by a depth-first walk (each job visited once, so linear in the links).
 * @param linksOf the job ids each other job links to (its `then`), as stored; a job with none gives []
 * @returns the cycle as job ids, its first job repeated at the end (`[a, b, a]`; `[a, a]` for a link to itself), or
 *   null when every chain from `start` ends
 */
export function findCycle(start: string, startLinks: readonly string[], linksOf: (jobId: string) => readonly string[]): string[] | null {
  const next = (id: string) => (id === start ? startLinks : linksOf(id));
  const state = new Map<string, 'open' | 'done'>();
  const path: string[] = [];
  // An explicit stack, not recursion: a chain may be thousands of jobs long.
  const stack: { id: string; links: readonly string[]; i: number }[] = [];
  const enter = (id: string) => {
    state.set(id, 'open');
    path.push(id);
    stack.push({ id, links: next(id), i: 0 });
  };
  enter(start);
  while (stack.length > 0) {
    const top = stack[stack.length - 1]!;
    if (top.i >= top.links.length) {
      state.set(top.id, 'done');
      stack.pop();
      path.pop();
      continue;
    }
    const to = top.links[top.i++]!;
    const seen = state.get(to);
    if (seen === 'open') return [...path.slice(path.indexOf(to)), to];
    if (seen === undefined) enter(to);
  }
  return null;
}

/** A cycle in words, each job by its name (or its id when it has none): `export → report → export`. */
export function describeCycle(cycle: readonly string[], nameOf: (jobId: string) => string | null | undefined): string {
  return cycle.map((id) => nameOf(id) || id).join(' → ');
}
