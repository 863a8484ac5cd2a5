/**
 * A run a dispatcher holds under a lease (the claim's product, src/store/queue/claim-runs.ts), with what it needs to
 * deliver it: the engine queues it, the attempt sends it. Times are epoch ms.
 */
import type { CallbackSpec } from './job.ts';
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
  /** The `webhook-id` when it is not the run id (a notification event's id), else null. */
  eventId: string | null;
  retry: RetryPolicy;
  relevancyWindowMs: number | null;
  deliveryMode: DeliveryMode;
  /**
   * The W3C `traceparent` of the API request that created the job (`jobs.trace_parent`), when it was traced; the
   * attempt's span links to it (README "Traces"). Absent or null: none.
   */
  jobTraceParent?: string | null;
  /** The `traceparent` of the claim span that took the run, set by the engine when tracing; the attempt links to it. */
  claimTraceParent?: string;
};
