import type { Clock } from '../domain/clock.ts';
import type { Cipher } from './cipher.ts';
import type { Executor } from './db.ts';
import type { OpenJobsEstimates } from './open-jobs.ts';

/**
 * What every store function needs: where to run SQL, how to seal secrets, what time it is; and, in a long-lived
 * process, the estimates that spare the active-jobs quota a count per creation (absent: every check counts).
 */
export type StoreContext = { db: Executor; cipher: Cipher; clock: Clock; openJobs?: OpenJobsEstimates };
