/** Pieces shared by the route modules. */
import { effectiveQuota, type QuotaOverrides } from '../../domain/quotas.ts';
import { errorChain } from '../../store/db.ts';
import type { CreateJobOptions } from '../../store/jobs.ts';
import type { AppDeps } from '../env.ts';
import { PROBLEMS } from '../problems.ts';
import { ProblemSchema } from '../schemas.ts';

/** OpenAPI `responses` entries for the given problem statuses. */
export function problemResponses(...statuses: number[]) {
  const out: Record<number, { description: string; content: { 'application/problem+json': { schema: typeof ProblemSchema } } }> = {};
  for (const s of statuses) {
    const title = Object.values(PROBLEMS).find((p) => p.status === s)?.title ?? 'Error';
    out[s] = { description: title, content: { 'application/problem+json': { schema: ProblemSchema } } };
  }
  return out;
}

/**
 * The store's job-creation options under the tenant's quotas: its `maxJobs` override (`overrides`, from the key lookup)
 * or else the configured default (0 = none).
 */
export function creationLimits(deps: Pick<AppDeps, 'config'>, overrides: QuotaOverrides | undefined): CreateJobOptions {
  return { maxActiveJobs: effectiveQuota('maxJobs', overrides ?? {}, { maxJobs: deps.config.limits?.maxActiveJobs ?? 0 }) ?? 0 };
}

/** The `code`s along an error's `cause` chain (drizzle wraps driver errors; at most 5 deep). */
export function errorCodes(err: unknown): string[] {
  return errorChain(err).flatMap((e) => (e.code !== undefined ? [String(e.code)] : []));
}
