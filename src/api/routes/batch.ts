/**
 * `POST /v1/jobs/batch`: up to 1,000 job bodies; each is validated on its own and answered in request order, and
 * the valid ones are committed together in one transaction.
 */
import { createRoute, OpenAPIHono, z } from '@hono/zod-openapi';
import { and, inArray } from 'drizzle-orm';
import type { JobSpec } from '../../domain/job.ts';
import { calendarsByKey } from '../../store/calendars.ts';
import type { Db } from '../../store/db.ts';
import { missingFlowControls } from '../../store/flow-controls.ts';
import { activeJobsRoom, createJobs, JobKeyTakenError, QuotaExceededError } from '../../store/jobs.ts';
import { jobs } from '../../store/schema.ts';
import { ofTenant } from '../../store/tenant-scope.ts';
import type { AppEnv } from '../env.ts';
import { calendarMissing, chainErrors, flowControlMissing, jobBodyErrors, resolveOncePerHost, toJobSpec } from '../job-input.ts';
import { unstorableFields } from '../json-guard.ts';
import { ApiError, problemBody } from '../problems.ts';
import { JobBodySchema, JobSchema, ProblemSchema } from '../schemas.ts';
import { jobView } from '../views.ts';
import { creationLimits, problemResponses } from './common.ts';

/** Most jobs in one batch. */
export const MAX_BATCH_JOBS = 1000;

type Result = { status: 201; job: ReturnType<typeof jobView> } | { status: number; problem: z.infer<typeof ProblemSchema> };

const problem = problemBody;

export function batchRoutes(): OpenAPIHono<AppEnv> {
  const app = new OpenAPIHono<AppEnv>();
  app.openapi(
    createRoute({
      method: 'post',
      path: '/v1/jobs/batch',
      summary: 'Register up to 1,000 jobs; the valid ones are committed in one transaction',
      request: {
        body: {
          required: true,
          content: { 'application/json': { schema: z.strictObject({ jobs: z.array(z.unknown()).min(1).max(MAX_BATCH_JOBS) }) } },
        },
      },
      responses: {
        200: {
          description: 'One result per job, in request order',
          content: {
            'application/json': {
              schema: z.object({
                results: z.array(
                  z.union([z.object({ status: z.literal(201), job: JobSchema }), z.object({ status: z.number(), problem: ProblemSchema })]),
                ),
              }),
            },
          },
        },
        ...problemResponses(400, 401, 413),
      },
    }),
    async (c) => {
      const deps = c.var.deps;
      const itemDeps = deps.resolveHost ? { ...deps, resolveHost: resolveOncePerHost(deps.resolveHost) } : deps;
      const tenantId = c.var.tenantId;
      const items = c.req.valid('json').jobs;
      const now = deps.store.clock.now();
      const results: (Result | null)[] = new Array(items.length).fill(null);
      const valid: { index: number; spec: JobSpec }[] = [];
      const keys = new Set<string>();
      for (const [index, item] of items.entries()) {
        const unstorable = unstorableFields(item);
        if (unstorable.length > 0) {
          results[index] = {
            status: 400,
            problem: problem('validation', unstorable.map((e) => `${e.path}: ${e.message}`).join('; '), unstorable),
          };
          continue;
        }
        const parsed = JobBodySchema.safeParse(item);
        if (!parsed.success) {
          const errors = await jobBodyErrors(item, itemDeps, now);
          results[index] = { status: 400, problem: problem('validation', errors.map((e) => `${e.path}: ${e.message}`).join('; '), errors) };
          continue;
        }
        try {
          const spec = await toJobSpec(parsed.data, itemDeps, now);
          if (spec.key !== null && keys.has(spec.key)) {
            results[index] = { status: 409, problem: problem('conflict', `key "${spec.key}" appears twice in this batch`) };
            continue;
          }
          if (spec.key !== null) keys.add(spec.key);
          valid.push({ index, spec });
        } catch (err) {
          if (!(err instanceof ApiError)) throw err;
          results[index] = { status: err.status, problem: problem(err.code, err.detail, err.errors) };
        }
      }
      // Flow controls named by the valid items, checked in one read: an item naming none of the tenant's is a 400.
      const missing = new Set(
        await missingFlowControls(
          deps.store.db,
          tenantId,
          valid.map((v) => v.spec.flowControlKey).filter((k): k is string => Boolean(k)),
        ),
      );
      for (let i = valid.length - 1; i >= 0 && missing.size > 0; i--) {
        const key = valid[i]!.spec.flowControlKey;
        if (key && missing.has(key)) {
          const errors = [flowControlMissing(key)];
          results[valid[i]!.index] = { status: 400, problem: problem('validation', `${errors[0]!.path}: ${errors[0]!.message}`, errors) };
          if (valid[i]!.spec.key !== null) keys.delete(valid[i]!.spec.key!);
          valid.splice(i, 1);
        }
      }
      // Calendars named by the valid items, likewise.
      const calendarKeys = valid.map((v) => v.spec.calendar?.key).filter((k): k is string => Boolean(k));
      const calendars = calendarKeys.length > 0 ? await calendarsByKey(deps.store.db, tenantId, calendarKeys) : new Map();
      for (let i = valid.length - 1; i >= 0 && calendarKeys.length > 0; i--) {
        const key = valid[i]!.spec.calendar?.key;
        if (key && !calendars.has(key)) {
          const errors = [calendarMissing(key)];
          results[valid[i]!.index] = { status: 400, problem: problem('validation', `${errors[0]!.path}: ${errors[0]!.message}`, errors) };
          if (valid[i]!.spec.key !== null) keys.delete(valid[i]!.spec.key!);
          valid.splice(i, 1);
        }
      }
      // The jobs the items' chains name, checked in one read: a link to no usable job of the tenant is a 400. New jobs
      // close no cycle (no link can name them yet).
      const chains = await chainErrors(
        deps,
        tenantId,
        valid.map((v) => ({ links: v.spec.then, owner: null })),
      );
      for (let i = valid.length - 1; i >= 0; i--) {
        const errors = chains[i]!;
        if (errors.length === 0) continue;
        results[valid[i]!.index] = {
          status: 400,
          problem: problem('validation', errors.map((e) => `${e.path}: ${e.message}`).join('; '), errors),
        };
        if (valid[i]!.spec.key !== null) keys.delete(valid[i]!.spec.key!);
        valid.splice(i, 1);
      }
      if (keys.size > 0) {
        const taken = await deps.store.db
          .select({ key: jobs.key })
          .from(jobs)
          .where(and(ofTenant(jobs, tenantId), inArray(jobs.key, [...keys])));
        const takenKeys = new Set(taken.map((t) => t.key));
        for (let i = valid.length - 1; i >= 0; i--) {
          const key = valid[i]!.spec.key;
          if (key !== null && takenKeys.has(key)) {
            results[valid[i]!.index] = { status: 409, problem: problem('conflict', `a job with key "${key}" exists`) };
            valid.splice(i, 1);
          }
        }
      }
      try {
        // The active-jobs quota, per item as validation is: the first valid jobs that fit are created, the rest
        // are answered 403 quota_exceeded (a retry after canceling some jobs sends only those).
        const { maxActiveJobs = 0 } = creationLimits(deps, c.var.quotas);
        const created = await (deps.store.db as Db).transaction(async (tx) => {
          const room = valid.length > 0 ? await activeJobsRoom({ ...deps.store, db: tx }, tenantId, maxActiveJobs, valid.length) : 0;
          for (const v of valid.splice(Math.min(room, valid.length))) {
            results[v.index] = { status: 403, problem: problem('quota_exceeded', new QuotaExceededError(maxActiveJobs, room).message) };
          }
          return createJobs(
            { ...deps.store, db: tx },
            tenantId,
            valid.map((v) => v.spec),
            now,
          );
        });
        created.forEach((job, i) => {
          results[valid[i]!.index] = { status: 201, job: jobView(job) };
        });
      } catch (err) {
        // One of the batch's keys (all checked free before) was taken meanwhile: the store says so, the app maps it.
        if (err instanceof JobKeyTakenError) throw new JobKeyTakenError(null);
        throw err;
      }
      return c.json({ results: results as Result[] }, 200);
    },
  );
  return app;
}
