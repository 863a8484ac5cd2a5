/**
 * A run a dispatcher holds under a lease (the claim's product, src/store/queue/claim-runs.ts), with what it needs to
 * deliver it: the engine queues it, the attempt sends it. Times are epoch ms.
 */
import type { ChainUpstream } from './chain.ts';
import type { AsyncCompletion } from './completion.ts';
import type { CallbackSpec, ResultRoute } from './job.ts';
import type { RetryPolicy } from './retry.ts';
import type { DeliveryMode, RunTrigger } from './states.ts';

/** A run this dispatcher now holds, with what it needs to deliver it. Times are epoch ms. */
export type ClaimedRun = {
  /** The run's bucket (src/domain/shard.ts): every later statement about the run names it. */
  shard: number;
  runId: string;
  jobId: string;
  tenantId: string;
  scheduledForMs: number;
  trigger: RunTrigger;
  attempt: number;
  leaseExpiresAtMs: number;
  /** When the attempt is due (epoch ms): `scheduledFor` plus jitter, or a retry's time; ≤ the claim's now + horizon. */
  dueAtMs: number;
  callback: CallbackSpec;
  authTokenEnc: string | null;
  /** The request body: the run's own (a notification event) or else the job's. */
  payload: unknown;
  /** The job's body that is not JSON (`body`), sent as is instead of `payload`; absent or null: `payload` as JSON. */
  body?: string | null;
  /** The sealed secret of `callback.auth` (basic password, OAuth2 client secret); absent or null: none. */
  authSecretEnc?: string | null;
  /** The `webhook-id` when it is not the run id (a notification event's id), else null. */
  eventId: string | null;
  retry: RetryPolicy;
  relevancyWindowMs: number | null;
  deliveryMode: DeliveryMode;
  /**
   * The job's result routes as claimed (API.md "Receiver control and result routing"): the finish of an attempt that
   * ends the run `succeeded` (`failed`) asks for a result delivery to `onSuccess` (`onFailure`). Null or absent: none
   * (always for a delivery's own runs).
   */
  onSuccess?: ResultRoute | null;
  onFailure?: ResultRoute | null;
  /**
   * The W3C `traceparent` of the API request that created the job (`jobs.trace_parent`), when it was traced; the
   * attempt's span links to it (README "Traces"). Absent or null: none.
   */
  jobTraceParent?: string | null;
  /** The `traceparent` of the claim span that took the run, set by the engine when tracing; the attempt links to it. */
  claimTraceParent?: string;
  /**
   * The job's async completion (src/domain/completion.ts) as of the claim: the request carries the completion URL and
   * token, and a success only acknowledges the attempt. Absent or null: the response decides the run.
   */
  completion?: AsyncCompletion | null;
  /**
   * A chained run's upstream (`trigger = 'chain'`, API.md "Richer schedules"): the request carries the
   * `Chime-Upstream-*` headers and a JSON object payload gains `upstream`. Absent or null: not a chained run.
   */
  upstream?: ChainUpstream | null;
};
