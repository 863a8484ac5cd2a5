/**
 * `createChimeClient`: the typed client of the Chime API over openapi-fetch, one method per `/v1` route (API.md).
 * Runtime-portable: `fetch`, `Request`, `Headers`, `crypto.randomUUID` and timers only, no `node:` module, so it runs
 * in browsers, Workers, Deno, Bun and Node ≥ 20. Its types (the options, the client's methods) are in surface.ts.
 */

import createClient from 'openapi-fetch';
import { ChimeError } from './errors.ts';
import { type Page, Paginator } from './pagination.ts';
import { DEFAULT_RETRY, type FetchLike, type RetryOptions, withRetry } from './retry.ts';
import type { paths } from './schema.ts';
import type { ChimeClient, ChimeClientOptions } from './surface.ts';

export type { ChimeClient, ChimeClientOptions, IdempotencyOptions } from './surface.ts';

import type { Calendar, FlowControl, Job, JobListQuery, NotificationDelivery, Run, RunListQuery } from './types.ts';

type ApiResult<T> = { data?: T; error?: unknown; response: Response };

/**
 * The answer's data, or a `ChimeError` for an error answer; always a promise (a bad argument rejects, never throws).
 * @param operation `METHOD /path` for the error's message
 * @param request sends the request
 */
async function send<T>(operation: string, request: () => Promise<ApiResult<T>>): Promise<T> {
  const { data, error, response } = await request();
  if (!response.ok) throw ChimeError.fromResponse(response, error, operation);
  return data as T;
}

/** A path parameter: a non-empty string (an empty one would name another route). */
function param(name: string, value: string): string {
  if (typeof value !== 'string' || value === '') throw new TypeError(`${name} must be a non-empty string`);
  return value;
}

/** Query strings as the API reads them: `metadata` as `metadata.<key>=<value>` pairs; undefined and null left out. */
function serializeQuery(query: Record<string, unknown>): string {
  const parts: string[] = [];
  const add = (k: string, v: unknown) => parts.push(`${encodeURIComponent(k)}=${encodeURIComponent(String(v))}`);
  for (const [k, v] of Object.entries(query)) {
    if (v === undefined || v === null) continue;
    if (k === 'metadata' && typeof v === 'object') {
      for (const [mk, mv] of Object.entries(v as Record<string, unknown>)) if (mv !== undefined && mv !== null) add(`metadata.${mk}`, mv);
    } else if (Array.isArray(v)) {
      for (const item of v) add(k, item);
    } else {
      add(k, v);
    }
  }
  return parts.join('&');
}

/** A list read page by page: `read(cursor)` answers one page as `{ <key>: items, nextCursor }`. */
function paged<T, K extends string>(
  operation: string,
  key: K,
  cursor: string | undefined,
  read: (cursor: string | undefined) => Promise<ApiResult<{ [P in K]: T[] } & { nextCursor: string | null }>>,
): Paginator<T> {
  return new Paginator<T>(async (c): Promise<Page<T>> => {
    const body = await send(operation, () => read(c));
    return { items: body[key], nextCursor: body.nextCursor };
  }, cursor);
}

/** A new idempotency key: a random UUID (WebCrypto, global in browsers, Workers, Deno and Node ≥ 19). */
function newIdempotencyKey(): string {
  return globalThis.crypto.randomUUID();
}

/**
 * A client of the Chime API at `baseUrl`, authenticated with `apiKey`.
 *
 * @example
 * const chime = createChimeClient({ baseUrl: 'https://chime.example.com', apiKey: process.env.CHIME_API_KEY! });
 * const job = await chime.jobs.create({ schedule: { type: 'cron', expression: '0 9 * * 1' }, callback: { url: 'https://example.com/hook' } });
 * for await (const run of chime.runs.list(job.jobId)) console.log(run.status);
 *
 * @throws TypeError when `baseUrl` or `apiKey` is missing, or `retry` holds a bound that is not a finite number ≥ 0
 */
export function createChimeClient(options: ChimeClientOptions): ChimeClient {
  if (!options || typeof options.baseUrl !== 'string' || options.baseUrl === '')
    throw new TypeError('createChimeClient: baseUrl is required');
  if (typeof options.apiKey !== 'string' || options.apiKey === '') throw new TypeError('createChimeClient: apiKey is required');
  const userFetch = options.fetch;
  const baseFetch: FetchLike = userFetch ? (r) => userFetch(r) : (r) => globalThis.fetch(r);
  const policy = options.retry === false ? { maxRetries: 0, maxDelayMs: 0 } : retryPolicy(options.retry);
  const fetch = withRetry(baseFetch, policy);
  /** For requests that change nothing whatever their method (the schedule preview). */
  const fetchSafe = withRetry(baseFetch, policy, true);

  const raw = createClient<paths, 'application/json'>({
    baseUrl: options.baseUrl,
    fetch,
    headers: { ...options.headers, authorization: `Bearer ${options.apiKey}` },
    querySerializer: (q) => serializeQuery(q as Record<string, unknown>),
  });

  const runsOfJob = (jobId: string, query: RunListQuery = {}) =>
    paged<Run, 'runs'>('GET /v1/jobs/{jobId}/runs', 'runs', query.cursor, (cursor) =>
      raw.GET('/v1/jobs/{jobId}/runs', { params: { path: { jobId: param('jobId', jobId) }, query: { ...query, cursor } } }),
    );
  const setPaused = (jobId: string, paused: boolean) =>
    send('PATCH /v1/jobs/{jobId}', () =>
      raw.PATCH('/v1/jobs/{jobId}', { params: { path: { jobId: param('jobId', jobId) } }, body: { paused } }),
    );

  return {
    jobs: {
      create: (body, opts = {}) =>
        send('POST /v1/jobs', () =>
          raw.POST('/v1/jobs', { params: { header: { 'idempotency-key': opts.idempotencyKey ?? newIdempotencyKey() } }, body }),
        ),
      get: (jobId) =>
        send('GET /v1/jobs/{jobId}', () => raw.GET('/v1/jobs/{jobId}', { params: { path: { jobId: param('jobId', jobId) } } })),
      getByKey: (key) =>
        send('GET /v1/jobs/by-key/{key}', () => raw.GET('/v1/jobs/by-key/{key}', { params: { path: { key: param('key', key) } } })),
      list: (query = {}) =>
        paged<Job, 'jobs'>('GET /v1/jobs', 'jobs', query.cursor, (cursor) =>
          // metadata is not a declared parameter (its names are the tenant's keys): serializeQuery sends it as metadata.<key>.
          raw.GET('/v1/jobs', { params: { query: { ...query, cursor } as NonNullable<JobListQuery> } }),
        ),
      update: (jobId, patch) =>
        send('PATCH /v1/jobs/{jobId}', () =>
          raw.PATCH('/v1/jobs/{jobId}', { params: { path: { jobId: param('jobId', jobId) } }, body: patch }),
        ),
      pause: (jobId) => setPaused(jobId, true),
      resume: (jobId) => setPaused(jobId, false),
      backfill: (jobId, input) =>
        send('POST /v1/jobs/{jobId}/backfill', () =>
          raw.POST('/v1/jobs/{jobId}/backfill', { params: { path: { jobId: param('jobId', jobId) } }, body: input }),
        ),
      trigger: (jobId, opts = {}) =>
        send('POST /v1/jobs/{jobId}/trigger', () =>
          raw.POST('/v1/jobs/{jobId}/trigger', {
            params: {
              path: { jobId: param('jobId', jobId) },
              header: opts.idempotencyKey ? { 'idempotency-key': opts.idempotencyKey } : {},
            },
          }),
        ),
      cancel: async (jobId) => {
        await send('DELETE /v1/jobs/{jobId}', () => raw.DELETE('/v1/jobs/{jobId}', { params: { path: { jobId: param('jobId', jobId) } } }));
      },
      upsertByKey: (key, body) =>
        send('PUT /v1/jobs/by-key/{key}', () => raw.PUT('/v1/jobs/by-key/{key}', { params: { path: { key: param('key', key) } }, body })),
      createBatch: async (bodies) =>
        (await send('POST /v1/jobs/batch', () => raw.POST('/v1/jobs/batch', { body: { jobs: bodies } }))).results,
      bulk: (action, filter) => send('POST /v1/jobs/bulk', () => raw.POST('/v1/jobs/bulk', { body: { action, filter } })),
      runs: runsOfJob,
    },
    runs: {
      get: (runId) =>
        send('GET /v1/runs/{runId}', () => raw.GET('/v1/runs/{runId}', { params: { path: { runId: param('runId', runId) } } })),
      list: runsOfJob,
      feed: (query = {}) =>
        paged<Run, 'runs'>('GET /v1/runs', 'runs', query.cursor, (cursor) =>
          raw.GET('/v1/runs', { params: { query: { ...query, cursor } } }),
        ),
      replay: (runId, opts = {}) =>
        send('POST /v1/runs/{runId}/replay', () =>
          raw.POST('/v1/runs/{runId}/replay', {
            params: {
              path: { runId: param('runId', runId) },
              header: opts.idempotencyKey ? { 'idempotency-key': opts.idempotencyKey } : {},
            },
          }),
        ),
      complete: (runId, token, report) =>
        send('POST /v1/runs/{runId}/completion', () =>
          raw.POST('/v1/runs/{runId}/completion', {
            params: { path: { runId: param('runId', runId) } },
            body: report,
            headers: { authorization: `Bearer ${param('token', token)}` },
          }),
        ),
      heartbeat: (runId, token, progress) =>
        send('POST /v1/runs/{runId}/heartbeat', () =>
          raw.POST('/v1/runs/{runId}/heartbeat', {
            params: { path: { runId: param('runId', runId) } },
            body: progress === undefined ? {} : { progress },
            headers: { authorization: `Bearer ${param('token', token)}` },
          }),
        ),
    },
    deadLetters: {
      list: (query = {}) =>
        paged<Run, 'runs'>('GET /v1/dead-letters', 'runs', query.cursor, (cursor) =>
          raw.GET('/v1/dead-letters', { params: { query: { ...query, cursor } } }),
        ),
      dismiss: async (runId) => {
        await send('DELETE /v1/dead-letters/{runId}', () =>
          raw.DELETE('/v1/dead-letters/{runId}', { params: { path: { runId: param('runId', runId) } } }),
        );
      },
      replay: (filter = {}) => send('POST /v1/dead-letters/replay', () => raw.POST('/v1/dead-letters/replay', { body: filter })),
    },
    schedules: {
      preview: async (schedule, count) =>
        (
          await send('POST /v1/schedules/preview', () =>
            raw.POST('/v1/schedules/preview', { body: count === undefined ? { schedule } : { schedule, count }, fetch: fetchSafe }),
          )
        ).occurrences,
    },
    apiKeys: {
      create: (input) => send('POST /v1/api-keys', () => raw.POST('/v1/api-keys', { body: input })),
      list: async () => (await send('GET /v1/api-keys', () => raw.GET('/v1/api-keys'))).apiKeys,
      revoke: async (keyId) => {
        await send('DELETE /v1/api-keys/{keyId}', () =>
          raw.DELETE('/v1/api-keys/{keyId}', { params: { path: { keyId: param('keyId', keyId) } } }),
        );
      },
    },
    signingSecrets: {
      rotate: () => send('POST /v1/signing-secrets/rotate', () => raw.POST('/v1/signing-secrets/rotate')),
    },
    notificationEndpoints: {
      create: (input) => send('POST /v1/notification-endpoints', () => raw.POST('/v1/notification-endpoints', { body: input })),
      list: async () => (await send('GET /v1/notification-endpoints', () => raw.GET('/v1/notification-endpoints'))).endpoints,
      delete: async (endpointId) => {
        await send('DELETE /v1/notification-endpoints/{endpointId}', () =>
          raw.DELETE('/v1/notification-endpoints/{endpointId}', { params: { path: { endpointId: param('endpointId', endpointId) } } }),
        );
      },
      deliveries: (endpointId, query = {}) =>
        paged<NotificationDelivery, 'deliveries'>(
          'GET /v1/notification-endpoints/{endpointId}/deliveries',
          'deliveries',
          query.cursor,
          (cursor) =>
            raw.GET('/v1/notification-endpoints/{endpointId}/deliveries', {
              params: { path: { endpointId: param('endpointId', endpointId) }, query: { ...query, cursor } },
            }),
        ),
    },
    flowControls: {
      put: (key, input) =>
        send('PUT /v1/flow-controls/{key}', () =>
          raw.PUT('/v1/flow-controls/{key}', { params: { path: { key: param('key', key) } }, body: input }),
        ),
      get: (key) =>
        send('GET /v1/flow-controls/{key}', () => raw.GET('/v1/flow-controls/{key}', { params: { path: { key: param('key', key) } } })),
      list: (query = {}) =>
        paged<FlowControl, 'flowControls'>('GET /v1/flow-controls', 'flowControls', query.cursor, (cursor) =>
          raw.GET('/v1/flow-controls', { params: { query: { ...query, cursor } } }),
        ),
      delete: async (key) => {
        await send('DELETE /v1/flow-controls/{key}', () =>
          raw.DELETE('/v1/flow-controls/{key}', { params: { path: { key: param('key', key) } } }),
        );
      },
    },
    calendars: {
      put: (key, input) =>
        send('PUT /v1/calendars/{key}', () =>
          raw.PUT('/v1/calendars/{key}', { params: { path: { key: param('key', key) } }, body: input }),
        ),
      get: (key) => send('GET /v1/calendars/{key}', () => raw.GET('/v1/calendars/{key}', { params: { path: { key: param('key', key) } } })),
      list: (query = {}) =>
        paged<Calendar, 'calendars'>('GET /v1/calendars', 'calendars', query.cursor, (cursor) =>
          raw.GET('/v1/calendars', { params: { query: { ...query, cursor } } }),
        ),
      delete: async (key) => {
        await send('DELETE /v1/calendars/{key}', () => raw.DELETE('/v1/calendars/{key}', { params: { path: { key: param('key', key) } } }));
      },
    },
    tenants: {
      create: (name) => send('POST /v1/tenants', () => raw.POST('/v1/tenants', { body: { name } })),
    },
    tenant: () => send('GET /v1/tenant', () => raw.GET('/v1/tenant')),
    usage: (days) => send('GET /v1/usage', () => raw.GET('/v1/usage', { params: { query: days === undefined ? {} : { days } } })),
    raw,
  };
}

/**
 * The retry bounds, each given one or its default (`DEFAULT_RETRY`): a spread would let `{ maxRetries: undefined }`
 * erase the default, and an undefined or NaN bound never stops the loop.
 * @throws TypeError for a bound that is not a finite number ≥ 0
 */
function retryPolicy(given: RetryOptions = {}): Required<RetryOptions> {
  const policy = { maxRetries: given.maxRetries ?? DEFAULT_RETRY.maxRetries, maxDelayMs: given.maxDelayMs ?? DEFAULT_RETRY.maxDelayMs };
  for (const [name, v] of Object.entries(policy)) {
    if (typeof v !== 'number' || !Number.isFinite(v) || v < 0)
      throw new TypeError(`createChimeClient: retry.${name} must be a finite number ≥ 0`);
  }
  return policy;
}
