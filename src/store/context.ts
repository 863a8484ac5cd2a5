import type { ChangeSource } from '../domain/audit.ts';
import type { Clock } from '../domain/clock.ts';
import type { Cipher } from './cipher.ts';
import type { Executor } from './db.ts';
import type { OpenJobsEstimates } from './open-jobs.ts';

/**
 * What every store function needs: where to run SQL, how to seal secrets, what time it is; in a long-lived process,
 * the estimates that spare the active-jobs quota a count per creation (absent: every check counts); and, for a change
 * made by a request, who made it (`source`: the API sets it per request, and the changes write audit entries with it;
 * absent, as in the CLI and tests, a change writes none).
 */
export type StoreContext = { db: Executor; cipher: Cipher; clock: Clock; openJobs?: OpenJobsEstimates; source?: ChangeSource };
