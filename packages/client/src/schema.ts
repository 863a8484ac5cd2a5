/**
 * GENERATED FILE, do not edit: the types of the Chime HTTP API, made by openapi-typescript from the OpenAPI 3.1
 * document the service serves at /openapi.json (src/api/routes/*.ts, src/api/schemas.ts).
 *
 * Regenerate after changing a route or a schema, from the repository root:
 *
 *     node --import tsx packages/client/scripts/generate.ts
 *
 * test/client/generated.test.ts fails while this file is out of date.
 */

export interface paths {
    "/v1/tenants": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Create a tenant (admin token, or anyone when signup is open) */
        post: {
            parameters: {
                query?: never;
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody: {
                content: {
                    "application/json": {
                        name: string;
                    };
                };
            };
            responses: {
                /** @description The tenant; its API key and signing secret are shown only here */
                201: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            tenant: components["schemas"]["Tenant"];
                            apiKey: string;
                            signingSecret: string;
                        };
                    };
                };
                /** @description The request is invalid */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
                /** @description Missing or invalid credentials */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/admin/tenants": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Every tenant, with its open jobs, status and quotas (admin token) */
        get: {
            parameters: {
                query?: {
                    limit?: number;
                    cursor?: string;
                };
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description A page of tenants, oldest first */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            tenants: components["schemas"]["AdminTenant"][];
                            nextCursor: string | null;
                        };
                    };
                };
                /** @description The request is invalid */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
                /** @description Missing or invalid credentials */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
                /** @description Too many requests */
                429: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
            };
        };
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/admin/tenants/{tenantId}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        post?: never;
        /** Delete a tenant and everything it owns (admin token) */
        delete: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    tenantId: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description Deleted */
                204: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content?: never;
                };
                /** @description Missing or invalid credentials */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
                /** @description Not found */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
                /** @description Too many requests */
                429: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
            };
        };
        options?: never;
        head?: never;
        /**
         * Suspend or resume a tenant, or set its quotas (admin token)
         * @description A suspended tenant's API keys are answered 403 tenant_suspended and its due runs are held (not sent, not lost) until it is resumed. A quota set to a number overrides the configured default for this tenant (0: no limit); set to null, the default applies again.
         */
        patch: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    tenantId: string;
                };
                cookie?: never;
            };
            requestBody: {
                content: {
                    "application/json": {
                        /** @enum {string} */
                        status?: "active" | "suspended";
                        quotas?: {
                            maxJobs?: number | null;
                            requestsPerSecond?: number | null;
                            callbacksPerDay?: number | null;
                        };
                    };
                };
            };
            responses: {
                /** @description The tenant after the change */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["AdminTenant"];
                    };
                };
                /** @description The request is invalid */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
                /** @description Missing or invalid credentials */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
                /** @description Not found */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
                /** @description Too many requests */
                429: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
            };
        };
        trace?: never;
    };
    "/v1/tenant": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The caller's tenant */
        get: {
            parameters: {
                query?: never;
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description The tenant and the calling key */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["CallerTenant"];
                    };
                };
                /** @description Missing or invalid credentials */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
            };
        };
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/api-keys": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The tenant's API keys, without secrets */
        get: {
            parameters: {
                query?: never;
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description Keys */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            apiKeys: components["schemas"]["ApiKey"][];
                        };
                    };
                };
                /** @description Missing or invalid credentials */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
            };
        };
        put?: never;
        /** Create an API key (the key is shown once) */
        post: {
            parameters: {
                query?: never;
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody: {
                content: {
                    "application/json": {
                        name: string;
                        /**
                         * Format: date-time
                         * @description RFC 3339 with an offset, within 0001-01-01T00:00:00.000Z..9999-12-31T23:59:59.999Z once the offset is applied
                         * @example 2026-12-01T09:00:00.000Z
                         */
                        expiresAt?: string;
                        scopes?: ("*" | "jobs:read" | "jobs:write" | "runs:read" | "runs:write" | "keys:manage" | "notifications:manage" | "calendars:manage" | "flow-controls:manage" | "audit:read" | "usage:read")[];
                    };
                };
            };
            responses: {
                /** @description The key */
                201: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ApiKey"] & {
                            key: string;
                        };
                    };
                };
                /** @description The request is invalid */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
                /** @description Missing or invalid credentials */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
                /** @description Not allowed */
                403: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/api-keys/{keyId}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        post?: never;
        /** Revoke an API key (effective at once) */
        delete: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    keyId: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description Revoked */
                204: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content?: never;
                };
                /** @description Missing or invalid credentials */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
                /** @description Not found */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
            };
        };
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/signing-secrets/rotate": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Rotate the signing secret (both sign for 24 h) */
        post: {
            parameters: {
                query?: never;
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description The new secret */
                201: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            signingSecret: string;
                            previousValidUntil: string;
                        };
                    };
                };
                /** @description Missing or invalid credentials */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/jobs/batch": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Register up to 1,000 jobs; the valid ones are committed in one transaction */
        post: {
            parameters: {
                query?: never;
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody: {
                content: {
                    "application/json": {
                        jobs: unknown[];
                    };
                };
            };
            responses: {
                /** @description One result per job, in request order */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            results: ({
                                /** @enum {number} */
                                status: 201;
                                job: components["schemas"]["Job"];
                            } | {
                                status: number;
                                problem: components["schemas"]["Problem"];
                            })[];
                        };
                    };
                };
                /** @description The request is invalid */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
                /** @description Missing or invalid credentials */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
                /** @description The request body is too large */
                413: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/dead-letters/{runId}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        post?: never;
        /** Dismiss a dead letter: no longer listed or replayed in bulk; the run and its attempts are kept */
        delete: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    runId: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description Dismissed: the run now has dismissedAt */
                204: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content?: never;
                };
                /** @description Missing or invalid credentials */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
                /** @description Not found */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
            };
        };
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/dead-letters/replay": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Replay up to 1000 dead letters, oldest first
         * @description Each matching dead letter gets a new run of its job due now (trigger `replay`, as `POST /v1/runs/:runId/replay`) and is dismissed, so that the next call goes on with the rest: call again while `remaining` is above 0. All given fields must match; an empty body (or `{}`) means every dead letter of the tenant. `since` (inclusive) and `until` (exclusive) bound `scheduledFor`. Dead letters of canceled jobs are not matched (a canceled job takes no new run): they stay listed until dismissed. One transaction per call.
         */
        post: {
            parameters: {
                query?: never;
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody?: {
                content: {
                    "application/json": components["schemas"]["DeadLetterReplay"];
                };
            };
            responses: {
                /** @description Replayed */
                202: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["DeadLetterReplayResult"];
                    };
                };
                /** @description The request is invalid */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
                /** @description Missing or invalid credentials */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/jobs/bulk": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Pause, resume or cancel up to 10000 jobs matching a filter
         * @description Each matching job is changed as `PATCH /v1/jobs/:jobId {"paused": true|false}` or `DELETE /v1/jobs/:jobId` would change it; jobs the action does not apply to (pausing a paused job, resuming an active one, canceling a canceled one) are matched but not changed. The filter must name something (`jobIds`, `status`, a non-empty `q` or `metadata`); more than 10000 matching jobs is a 400 and nothing changes. One transaction.
         */
        post: {
            parameters: {
                query?: never;
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody: {
                content: {
                    "application/json": components["schemas"]["BulkJobAction"];
                };
            };
            responses: {
                /** @description Done */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["BulkJobActionResult"];
                    };
                };
                /** @description The request is invalid */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
                /** @description Missing or invalid credentials */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/jobs": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List jobs, newest first; search by name or key (q) and by metadata (metadata.<key>=<value>)
         * @description Every given filter must match. `q`: a case-insensitive substring of the name or key. `metadata.<key>=<value>` (any number of different keys, at most 20): jobs whose metadata holds each pair, e.g. `?metadata.team=ops&metadata.env=prod`.
         */
        get: {
            parameters: {
                query?: {
                    status?: "active" | "paused" | "completed" | "canceled";
                    /** @description Only jobs whose name or key contains this text, case-insensitively (1..200 characters; `%`, `_` and `\` are literal). Also `metadata.<key>=<value>` (repeatable over different keys, at most 20): only jobs whose metadata holds every such pair. */
                    q?: string;
                    limit?: number;
                    cursor?: string;
                };
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description A page of jobs */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            jobs: components["schemas"]["Job"][];
                            nextCursor: string | null;
                        };
                    };
                };
                /** @description The request is invalid */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
                /** @description Missing or invalid credentials */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
            };
        };
        put?: never;
        /** Register a job */
        post: {
            parameters: {
                query?: never;
                header?: {
                    "idempotency-key"?: string;
                };
                path?: never;
                cookie?: never;
            };
            requestBody: {
                content: {
                    "application/json": components["schemas"]["JobInput"];
                };
            };
            responses: {
                /** @description The job first created with this Idempotency-Key and body */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Job"];
                    };
                };
                /** @description Created: the job and its first run are committed */
                201: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Job"];
                    };
                };
                /** @description The request is invalid */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
                /** @description Missing or invalid credentials */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
                /** @description Conflict */
                409: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
                /** @description The request body is too large */
                413: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/jobs/{jobId}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Read a job */
        get: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    jobId: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description The job */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Job"];
                    };
                };
                /** @description Missing or invalid credentials */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
                /** @description Not found */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
            };
        };
        put?: never;
        post?: never;
        /** Cancel a job (its waiting runs are canceled; history is kept) */
        delete: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    jobId: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description Canceled */
                204: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content?: never;
                };
                /** @description Missing or invalid credentials */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
                /** @description Not found */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
            };
        };
        options?: never;
        head?: never;
        /** Pause, resume or change a job */
        patch: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    jobId: string;
                };
                cookie?: never;
            };
            requestBody: {
                content: {
                    "application/json": components["schemas"]["JobPatch"];
                };
            };
            responses: {
                /** @description The job */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Job"];
                    };
                };
                /** @description The request is invalid */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
                /** @description Missing or invalid credentials */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
                /** @description Not found */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
                /** @description Conflict */
                409: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
            };
        };
        trace?: never;
    };
    "/v1/jobs/by-key/{key}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Read the job with this key (the tenant's own name for it) */
        get: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    key: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description The job */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Job"];
                    };
                };
                /** @description The request is invalid */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
                /** @description Missing or invalid credentials */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
                /** @description Not found */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
            };
        };
        /** Create or replace the job with this key */
        put: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    key: string;
                };
                cookie?: never;
            };
            requestBody: {
                content: {
                    "application/json": components["schemas"]["JobInput"];
                };
            };
            responses: {
                /** @description Replaced */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Job"];
                    };
                };
                /** @description Created */
                201: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Job"];
                    };
                };
                /** @description The request is invalid */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
                /** @description Missing or invalid credentials */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
                /** @description Conflict */
                409: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
                /** @description The request body is too large */
                413: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
            };
        };
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/jobs/{jobId}/runs": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** List a job's runs, newest first */
        get: {
            parameters: {
                query?: {
                    status?: "scheduled" | "running" | "retrying" | "succeeded" | "failed" | "expired" | "skipped" | "canceled";
                    limit?: number;
                    cursor?: string;
                };
                header?: never;
                path: {
                    jobId: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description A page of runs */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            runs: components["schemas"]["Run"][];
                            nextCursor: string | null;
                        };
                    };
                };
                /** @description The request is invalid */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
                /** @description Missing or invalid credentials */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
                /** @description Not found */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
            };
        };
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/jobs/{jobId}/trigger": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Run a job now, outside its schedule (also when paused) */
        post: {
            parameters: {
                query?: never;
                header?: {
                    "idempotency-key"?: string;
                };
                path: {
                    jobId: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description Accepted: a run due now */
                202: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            runId: string;
                        };
                    };
                };
                /** @description Missing or invalid credentials */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
                /** @description Not found */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
                /** @description Conflict */
                409: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/runs/{runId}/replay": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** A new run with the same job and payload (for dead letters: a dead letter replayed is dismissed) */
        post: {
            parameters: {
                query?: never;
                header?: {
                    "idempotency-key"?: string;
                };
                path: {
                    runId: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description Accepted: a run due now */
                202: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            runId: string;
                        };
                    };
                };
                /** @description Missing or invalid credentials */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
                /** @description Not found */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
                /** @description Conflict */
                409: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/jobs/{jobId}/backfill": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Runs for a job's past occurrences that have none
         * @description A run (trigger `backfill`, `scheduledFor` the occurrence) for each occurrence of the job in [from, to), as its calendar makes it fire, that has no run yet, oldest first, at most `limit` per call: a second call for the same range creates nothing. Sent now, under the job's overlap policy: with `skip` or `buffer-one` one after another. A range of more than 10000 occurrences is refused.
         */
        post: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    jobId: string;
                };
                cookie?: never;
            };
            requestBody: {
                content: {
                    "application/json": components["schemas"]["BackfillInput"];
                };
            };
            responses: {
                /** @description The runs created */
                202: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["BackfillResult"];
                    };
                };
                /** @description The request is invalid */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
                /** @description Missing or invalid credentials */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
                /** @description Not found */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
                /** @description Conflict */
                409: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/schedules/preview": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * The next occurrences of a schedule (no job made)
         * @description With `calendar`, the occurrences are where they fire under it, and `calendar` in the answer lists the occurrences it moved (`firesAt`) or skipped (`firesAt: null`) up to the last one shown.
         */
        post: {
            parameters: {
                query?: never;
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody: {
                content: {
                    "application/json": {
                        schedule: components["schemas"]["Schedule"];
                        calendar?: components["schemas"]["CalendarRef"];
                        /** @default 10 */
                        count?: number;
                    };
                };
            };
            responses: {
                /** @description Occurrences, RFC 3339 UTC */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            occurrences: string[];
                            calendar?: {
                                occurrence: string;
                                firesAt: string | null;
                            }[];
                        };
                    };
                };
                /** @description The request is invalid */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
                /** @description Missing or invalid credentials */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/runs": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Every run of the tenant's jobs, newest first
         * @description `since` (inclusive) and `until` (exclusive) bound `scheduledFor`. A `jobId` of no job of the tenant matches no run.
         */
        get: {
            parameters: {
                query?: {
                    status?: "scheduled" | "running" | "retrying" | "succeeded" | "failed" | "expired" | "skipped" | "canceled";
                    jobId?: string;
                    /** @description RFC 3339 with an offset, within 0001-01-01T00:00:00.000Z..9999-12-31T23:59:59.999Z once the offset is applied */
                    since?: string;
                    /** @description RFC 3339 with an offset, within 0001-01-01T00:00:00.000Z..9999-12-31T23:59:59.999Z once the offset is applied */
                    until?: string;
                    limit?: number;
                    cursor?: string;
                };
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description A page of runs */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            runs: components["schemas"]["Run"][];
                            nextCursor: string | null;
                        };
                    };
                };
                /** @description The request is invalid */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
                /** @description Missing or invalid credentials */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
            };
        };
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/runs/{runId}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Read a run and every attempt of it */
        get: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    runId: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description The run */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Run"] & {
                            attemptLog: components["schemas"]["Attempt"][];
                        };
                    };
                };
                /** @description Missing or invalid credentials */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
                /** @description Not found */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
            };
        };
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/dead-letters": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Runs that ended failed (retries exhausted), newest first */
        get: {
            parameters: {
                query?: {
                    limit?: number;
                    cursor?: string;
                };
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description A page of failed runs */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            runs: components["schemas"]["Run"][];
                            nextCursor: string | null;
                        };
                    };
                };
                /** @description The request is invalid */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
                /** @description Missing or invalid credentials */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
            };
        };
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/runs/{runId}/completion": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Report the end of an async job's attempt (the receiver, with the attempt's completion token)
         * @description `succeeded` ends the run `succeeded`; `failed` fails the attempt with `error` and the retry policy decides. `output` (≤ 16 KiB as JSON) becomes the run's `output`. A second report of the attempt → 409 (the first stands); a wrong or stale token → 401.
         */
        post: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    runId: string;
                };
                cookie?: never;
            };
            requestBody: {
                content: {
                    "application/json": components["schemas"]["CompletionReport"];
                };
            };
            responses: {
                /** @description The run, as it now is */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Run"];
                    };
                };
                /** @description The request is invalid */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
                /** @description Missing or invalid credentials */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
                /** @description Not found */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
                /** @description Conflict */
                409: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/runs/{runId}/heartbeat": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Tell Chime an async job's attempt is still at work (the receiver, with the attempt's completion token)
         * @description Postpones the heartbeat deadline (now + `completion.heartbeatTimeoutMs`); `progress` (≤ 1 KiB as JSON) is shown on the run. A wrong or stale token → 401; an attempt no longer awaited → 409.
         */
        post: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    runId: string;
                };
                cookie?: never;
            };
            requestBody?: {
                content: {
                    "application/json": components["schemas"]["Heartbeat"];
                };
            };
            responses: {
                /** @description The deadlines: the report is due by `completionDeadline`, the next heartbeat by `heartbeatDeadline` (null: none needed) */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            completionDeadline: string;
                            heartbeatDeadline: string | null;
                        };
                    };
                };
                /** @description The request is invalid */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
                /** @description Missing or invalid credentials */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
                /** @description Not found */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
                /** @description Conflict */
                409: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/usage": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * The tenant's runs per day by outcome, fire lag, and active and paused jobs
         * @description Counts per UTC day of the runs that finished that day (and of the attempts started that day), for the last `days` days up to now, oldest first, every day present. Notification deliveries are not counted.
         */
        get: {
            parameters: {
                query?: {
                    days?: number;
                };
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description Usage */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Usage"];
                    };
                };
                /** @description The request is invalid */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
                /** @description Missing or invalid credentials */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
            };
        };
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/notification-endpoints": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The tenant's notification endpoints */
        get: {
            parameters: {
                query?: never;
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description Endpoints */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            endpoints: components["schemas"]["NotificationEndpoint"][];
                        };
                    };
                };
                /** @description Missing or invalid credentials */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
            };
        };
        put?: never;
        /**
         * Register a notification endpoint (at most 10 per tenant)
         * @description Each event of a subscribed type is POSTed to the URL, signed like a callback (Standard Webhooks headers with the tenant's signing secret, webhook-id = the event id, and Chime-Signature), at least once with backoff for 24 h.
         */
        post: {
            parameters: {
                query?: never;
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody: {
                content: {
                    "application/json": components["schemas"]["NotificationEndpointInput"];
                };
            };
            responses: {
                /** @description Registered */
                201: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["NotificationEndpoint"];
                    };
                };
                /** @description The request is invalid */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
                /** @description Missing or invalid credentials */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
                /** @description Conflict */
                409: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/notification-endpoints/{endpointId}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        post?: never;
        /** Delete a notification endpoint (its waiting deliveries are canceled) */
        delete: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    endpointId: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description Deleted */
                204: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content?: never;
                };
                /** @description Missing or invalid credentials */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
                /** @description Not found */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
            };
        };
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/notification-endpoints/{endpointId}/deliveries": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** An endpoint's recent deliveries, newest first, with their status and last error */
        get: {
            parameters: {
                query?: {
                    limit?: number;
                    cursor?: string;
                };
                header?: never;
                path: {
                    endpointId: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description A page of deliveries */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            deliveries: components["schemas"]["NotificationDelivery"][];
                            nextCursor: string | null;
                        };
                    };
                };
                /** @description The request is invalid */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
                /** @description Missing or invalid credentials */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
                /** @description Not found */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
            };
        };
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/flow-controls/{key}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** A flow control with its state (`inFlight`, `waiting`) */
        get: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    key: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description The flow control */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["FlowControl"];
                    };
                };
                /** @description The request is invalid */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
                /** @description Missing or invalid credentials */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
                /** @description Not found */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
            };
        };
        /**
         * Create or replace a flow control
         * @description Limits the requests of every job whose flowControlKey names it, across all dispatchers together: at most `parallelism` in flight, at most `rate.limit` started in any window of `rate.periodMs`. Runs held back stay due and start in due order as capacity frees; a paused flow control holds all its runs. Retries count.
         */
        put: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    key: string;
                };
                cookie?: never;
            };
            requestBody: {
                content: {
                    "application/json": components["schemas"]["FlowControlInput"];
                };
            };
            responses: {
                /** @description Replaced */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["FlowControl"];
                    };
                };
                /** @description Created */
                201: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["FlowControl"];
                    };
                };
                /** @description The request is invalid */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
                /** @description Missing or invalid credentials */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
            };
        };
        post?: never;
        /** Delete a flow control (refused with 409 while open jobs name it) */
        delete: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    key: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description Deleted */
                204: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content?: never;
                };
                /** @description The request is invalid */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
                /** @description Missing or invalid credentials */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
                /** @description Not found */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
                /** @description Conflict */
                409: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
            };
        };
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/flow-controls": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The tenant's flow controls, by key, with their state */
        get: {
            parameters: {
                query?: {
                    limit?: number;
                    /** @description The last key of the previous page */
                    cursor?: string;
                };
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description A page of flow controls */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            flowControls: components["schemas"]["FlowControl"][];
                            nextCursor: string | null;
                        };
                    };
                };
                /** @description The request is invalid */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
                /** @description Missing or invalid credentials */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
            };
        };
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/calendars/{key}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** A calendar */
        get: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    key: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description The calendar */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Calendar"];
                    };
                };
                /** @description The request is invalid */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
                /** @description Missing or invalid credentials */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
                /** @description Not found */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
            };
        };
        /**
         * Create or replace a calendar
         * @description An occurrence of a job naming this calendar that falls on a weekend day or holiday (in the calendar's time zone) is skipped or moved to the next or previous business day, as the job says. A change re-plans the pending run of every active job that uses it.
         */
        put: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    key: string;
                };
                cookie?: never;
            };
            requestBody: {
                content: {
                    "application/json": components["schemas"]["CalendarInput"];
                };
            };
            responses: {
                /** @description Replaced */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Calendar"];
                    };
                };
                /** @description Created */
                201: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Calendar"];
                    };
                };
                /** @description The request is invalid */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
                /** @description Missing or invalid credentials */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
            };
        };
        post?: never;
        /** Delete a calendar (refused with 409 while open jobs use it) */
        delete: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    key: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description Deleted */
                204: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content?: never;
                };
                /** @description The request is invalid */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
                /** @description Missing or invalid credentials */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
                /** @description Not found */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
                /** @description Conflict */
                409: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
            };
        };
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/calendars": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The tenant's calendars, by key */
        get: {
            parameters: {
                query?: {
                    limit?: number;
                    /** @description The last key of the previous page */
                    cursor?: string;
                };
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description A page of calendars */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            calendars: components["schemas"]["Calendar"][];
                            nextCursor: string | null;
                        };
                    };
                };
                /** @description The request is invalid */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
                /** @description Missing or invalid credentials */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
            };
        };
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/jobs/{jobId}/result-deliveries": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** A job's result deliveries (to onSuccess / onFailure), newest first, with their status and last error */
        get: {
            parameters: {
                query?: {
                    limit?: number;
                    cursor?: string;
                };
                header?: never;
                path: {
                    jobId: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description A page of result deliveries */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            deliveries: components["schemas"]["ResultDelivery"][];
                            nextCursor: string | null;
                        };
                    };
                };
                /** @description The request is invalid */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
                /** @description Missing or invalid credentials */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
                /** @description Not found */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
            };
        };
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/audit-log": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Who changed what: the audit log, newest first
         * @description One entry per change, written in the transaction of the change. `since` (inclusive) and `until` (exclusive) bound `at`; reads are not audited.
         */
        get: {
            parameters: {
                query?: {
                    action?: "job.created" | "job.updated" | "job.replaced" | "job.paused" | "job.resumed" | "job.canceled" | "job.triggered" | "job.backfilled" | "jobs.bulk" | "run.replayed" | "dead_letter.dismissed" | "api_key.created" | "api_key.revoked" | "signing_secret.rotated" | "notification_endpoint.created" | "notification_endpoint.deleted" | "tenant.created" | "tenant.suspended" | "tenant.resumed" | "tenant.quotas_changed" | "flow_control.created" | "flow_control.updated" | "flow_control.deleted" | "calendar.created" | "calendar.updated" | "calendar.deleted";
                    keyId?: string;
                    /** @description RFC 3339 with an offset, within 0001-01-01T00:00:00.000Z..9999-12-31T23:59:59.999Z once the offset is applied */
                    since?: string;
                    /** @description RFC 3339 with an offset, within 0001-01-01T00:00:00.000Z..9999-12-31T23:59:59.999Z once the offset is applied */
                    until?: string;
                    limit?: number;
                    cursor?: string;
                };
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description A page of entries */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            entries: components["schemas"]["AuditEntry"][];
                            nextCursor: string | null;
                        };
                    };
                };
                /** @description The request is invalid */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
                /** @description Missing or invalid credentials */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
                /** @description Not allowed */
                403: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
            };
        };
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/jobs": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Register a cron job (compatibility form of POST /v1/jobs) */
        post: {
            parameters: {
                query?: never;
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody: {
                content: {
                    "application/json": components["schemas"]["CompatJobInput"];
                };
            };
            responses: {
                /** @description Created: the job and its first run are committed */
                201: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            /** Format: uuid */
                            jobId: string;
                        };
                    };
                };
                /** @description The request is invalid */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
                /** @description Missing or invalid credentials */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
                /** @description Conflict */
                409: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
                /** @description The request body is too large */
                413: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
                /** @description Too many requests */
                429: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/jobs/{jobId}/runs": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** A job's runs, newest first (compatibility form of GET /v1/jobs/:jobId/runs) */
        get: {
            parameters: {
                query?: {
                    limit?: number;
                };
                header?: never;
                path: {
                    jobId: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description The newest runs */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            runs: components["schemas"]["CompatRun"][];
                        };
                    };
                };
                /** @description The request is invalid */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
                /** @description Missing or invalid credentials */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
                /** @description Not found */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
                /** @description Too many requests */
                429: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
            };
        };
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/jobs/{jobId}/trigger": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Run a job now (compatibility form of POST /v1/jobs/:jobId/trigger) */
        post: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    jobId: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description Accepted: a run due now */
                202: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            /** Format: uuid */
                            runId: string;
                        };
                    };
                };
                /** @description Missing or invalid credentials */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
                /** @description Not found */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
                /** @description Conflict */
                409: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
                /** @description Too many requests */
                429: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/jobs/{jobId}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        /** Pause or resume a job (compatibility form of PATCH /v1/jobs/:jobId) */
        patch: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    jobId: string;
                };
                cookie?: never;
            };
            requestBody: {
                content: {
                    "application/json": components["schemas"]["CompatJobPatch"];
                };
            };
            responses: {
                /** @description The job is paused or active */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            /** Format: uuid */
                            jobId: string;
                            paused: boolean;
                        };
                    };
                };
                /** @description The request is invalid */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
                /** @description Missing or invalid credentials */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
                /** @description Not found */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
                /** @description Conflict */
                409: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
                /** @description Too many requests */
                429: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/problem+json": components["schemas"]["Problem"];
                    };
                };
            };
        };
        trace?: never;
    };
}
export type webhooks = Record<string, never>;
export interface components {
    schemas: {
        Tenant: {
            tenantId: string;
            name: string;
            createdAt: string;
        };
        Problem: {
            type: string;
            title: string;
            status: number;
            detail: string;
            errors?: {
                path: string;
                message: string;
            }[];
            requestId?: string;
        };
        AdminTenant: {
            tenantId: string;
            name: string;
            createdAt: string;
            /** @enum {string} */
            status: "active" | "suspended";
            jobs: {
                active: number;
                paused: number;
            };
            quotas: {
                maxJobs: number | null;
                requestsPerSecond: number | null;
                callbacksPerDay: number | null;
            };
            quotaOverrides: {
                maxJobs?: number;
                requestsPerSecond?: number;
                callbacksPerDay?: number;
            };
        };
        CallerTenant: components["schemas"]["Tenant"] & {
            apiKey: {
                keyId: string;
                prefix: string;
                scopes: ("*" | "jobs:read" | "jobs:write" | "runs:read" | "runs:write" | "keys:manage" | "notifications:manage" | "calendars:manage" | "flow-controls:manage" | "audit:read" | "usage:read")[];
            };
        };
        ApiKey: {
            keyId: string;
            name: string;
            prefix: string;
            createdAt: string;
            expiresAt: string | null;
            lastUsedAt: string | null;
            scopes: ("*" | "jobs:read" | "jobs:write" | "runs:read" | "runs:write" | "keys:manage" | "notifications:manage" | "calendars:manage" | "flow-controls:manage" | "audit:read" | "usage:read")[];
        };
        Job: {
            /** Format: uuid */
            jobId: string;
            name: string | null;
            key: string | null;
            /** @enum {string} */
            status: "active" | "paused" | "completed" | "canceled";
            /** @enum {string|null} */
            pausedReason: "manual" | "gone" | "consecutive_failures" | "receiver" | null;
            pauseAfterFailures: number;
            consecutiveFailures: number;
            schedule: components["schemas"]["Schedule"];
            callback: {
                url: string;
                /** @enum {string} */
                method: "POST" | "PUT" | "PATCH" | "GET" | "DELETE";
                headers: {
                    [key: string]: string;
                };
                hasAuthToken: boolean;
                successStatusCodes: (number | string)[];
                timeoutMs: number;
                successBody: {
                    contains: string;
                } | {
                    jsonPointer: string;
                    equals?: unknown;
                } | null;
                auth: {
                    /** @enum {string} */
                    type: "basic" | "oauth2";
                    username?: string;
                    tokenUrl?: string;
                    clientId?: string;
                    scope?: string;
                    audience?: string;
                } | null;
                contentType: string | null;
                jwtAudience: string | null;
            };
            payload?: unknown;
            body: string | null;
            flowControlKey: string | null;
            retry: components["schemas"]["RetryPolicy"];
            relevancyWindowMs: number | null;
            /** @enum {string} */
            deliveryMode: "at-least-once" | "at-most-once";
            /** @enum {string} */
            overlapPolicy: "allow" | "skip" | "buffer-one";
            /** @enum {string} */
            catchUp: "one" | "all" | "none";
            jitterMs: number;
            metadata: {
                [key: string]: string;
            };
            onSuccess: {
                url: string;
            } | null;
            onFailure: {
                url: string;
            } | null;
            calendar: {
                key: string;
                /** @enum {string} */
                roll: "skip" | "next" | "previous";
            } | null;
            maxRuns: number | null;
            scheduledRuns: number;
            /** @enum {string} */
            jitterMode: "stable" | "random" | "spread";
            then: {
                jobId: string;
                /** @enum {string} */
                on: "succeeded" | "failed" | "finished";
            }[] | null;
            completion: {
                /** @enum {string} */
                mode: "response" | "async";
                timeoutMs?: number;
                heartbeatTimeoutMs?: number;
            };
            nextRunAt: string | null;
            lastRunAt: string | null;
            createdAt: string;
            updatedAt: string;
        };
        Schedule: {
            /** @enum {string} */
            type: "once";
            /**
             * Format: date-time
             * @description RFC 3339 with an offset, within 0001-01-01T00:00:00.000Z..9999-12-31T23:59:59.999Z once the offset is applied
             * @example 2026-12-01T09:00:00.000Z
             */
            at: string;
        } | {
            /** @enum {string} */
            type: "delay";
            delayMs: number;
        } | {
            /** @enum {string} */
            type: "interval";
            everyMs: number;
            /**
             * Format: date-time
             * @description RFC 3339 with an offset, within 0001-01-01T00:00:00.000Z..9999-12-31T23:59:59.999Z once the offset is applied
             * @example 2026-12-01T09:00:00.000Z
             */
            startAt?: string;
            /**
             * Format: date-time
             * @description RFC 3339 with an offset, within 0001-01-01T00:00:00.000Z..9999-12-31T23:59:59.999Z once the offset is applied
             * @example 2026-12-01T09:00:00.000Z
             */
            endAt?: string;
        } | {
            /** @enum {string} */
            type: "dates";
            dates: string[];
        } | {
            /** @enum {string} */
            type: "cron";
            /** @description 5 fields (minute hour day-of-month month day-of-week), 6 with seconds first, or a macro (@daily…) */
            expression: string;
            timezone?: string;
            /**
             * Format: date-time
             * @description RFC 3339 with an offset, within 0001-01-01T00:00:00.000Z..9999-12-31T23:59:59.999Z once the offset is applied
             * @example 2026-12-01T09:00:00.000Z
             */
            startAt?: string;
            /**
             * Format: date-time
             * @description RFC 3339 with an offset, within 0001-01-01T00:00:00.000Z..9999-12-31T23:59:59.999Z once the offset is applied
             * @example 2026-12-01T09:00:00.000Z
             */
            endAt?: string;
        } | {
            /** @enum {string} */
            type: "union";
            schedules: ({
                /** @enum {string} */
                type: "once";
                /**
                 * Format: date-time
                 * @description RFC 3339 with an offset, within 0001-01-01T00:00:00.000Z..9999-12-31T23:59:59.999Z once the offset is applied
                 * @example 2026-12-01T09:00:00.000Z
                 */
                at: string;
            } | {
                /** @enum {string} */
                type: "interval";
                everyMs: number;
                /**
                 * Format: date-time
                 * @description RFC 3339 with an offset, within 0001-01-01T00:00:00.000Z..9999-12-31T23:59:59.999Z once the offset is applied
                 * @example 2026-12-01T09:00:00.000Z
                 */
                startAt?: string;
                /**
                 * Format: date-time
                 * @description RFC 3339 with an offset, within 0001-01-01T00:00:00.000Z..9999-12-31T23:59:59.999Z once the offset is applied
                 * @example 2026-12-01T09:00:00.000Z
                 */
                endAt?: string;
            } | {
                /** @enum {string} */
                type: "dates";
                dates: string[];
            } | {
                /** @enum {string} */
                type: "cron";
                /** @description 5 fields (minute hour day-of-month month day-of-week), 6 with seconds first, or a macro (@daily…) */
                expression: string;
                timezone?: string;
                /**
                 * Format: date-time
                 * @description RFC 3339 with an offset, within 0001-01-01T00:00:00.000Z..9999-12-31T23:59:59.999Z once the offset is applied
                 * @example 2026-12-01T09:00:00.000Z
                 */
                startAt?: string;
                /**
                 * Format: date-time
                 * @description RFC 3339 with an offset, within 0001-01-01T00:00:00.000Z..9999-12-31T23:59:59.999Z once the offset is applied
                 * @example 2026-12-01T09:00:00.000Z
                 */
                endAt?: string;
            })[];
        };
        /** @description strategy exponential | linear | fixed | schedule | none. `schedule`: retry n waits `delaysMs[n−1]`, maxAttempts is delaysMs.length + 1, no jitter unless `jitter: true`; a Retry-After still raises a wait (up to maxDelayMs). */
        RetryPolicy: {
            /** @enum {string} */
            strategy?: "exponential" | "linear" | "fixed" | "schedule" | "none";
            maxAttempts?: number;
            initialDelayMs?: number;
            maxDelayMs?: number;
            multiplier?: number;
            jitter?: boolean;
            /** @description strategy "schedule" only: the wait before retry n is delaysMs[n−1] (1..50 entries, each 0..86400000 ms) */
            delaysMs?: number[];
        };
        DeadLetterReplayResult: {
            replayed: number;
            /** @description the new runs, in the order of their dead letters (oldest first) */
            runIds: string[];
            /** @description matching dead letters left for the next call */
            remaining: number;
        };
        DeadLetterReplay: {
            runIds?: string[];
            /** Format: uuid */
            jobId?: string;
            /**
             * Format: date-time
             * @description dead letters scheduled at or after this instant
             * @example 2026-12-01T09:00:00.000Z
             */
            since?: string;
            /**
             * Format: date-time
             * @description dead letters scheduled before this instant
             * @example 2026-12-01T09:00:00.000Z
             */
            until?: string;
        };
        BulkJobActionResult: {
            matched: number;
            changed: number;
        };
        BulkJobAction: {
            /** @enum {string} */
            action: "pause" | "resume" | "cancel";
            filter: components["schemas"]["JobFilter"];
        };
        JobFilter: {
            jobIds?: string[];
            /** @enum {string} */
            status?: "active" | "paused" | "completed" | "canceled";
            /** @description case-insensitive substring of the name or key */
            q?: string;
            /** @description pairs the job must all hold */
            metadata?: {
                [key: string]: string;
            };
        };
        JobInput: {
            name?: string;
            schedule: components["schemas"]["Schedule"];
            callback: components["schemas"]["Callback"];
            payload?: unknown;
            /** @description A body that is not JSON, sent as is (UTF-8) instead of `payload`; ≤ 256 KiB. Not with `payload`, not for GET. */
            body?: string;
            flowControlKey?: string | null;
            retry?: components["schemas"]["RetryPolicy"];
            relevancyWindowMs?: number | null;
            /** @enum {string} */
            deliveryMode?: "at-least-once" | "at-most-once";
            /** @enum {string} */
            overlapPolicy?: "allow" | "skip" | "buffer-one";
            /** @enum {string} */
            catchUp?: "one" | "all" | "none";
            jitterMs?: number;
            key?: string;
            pauseAfterFailures?: number;
            completion?: components["schemas"]["Completion"];
            onSuccess?: components["schemas"]["ResultRoute"];
            onFailure?: components["schemas"]["ResultRoute"];
            calendar?: components["schemas"]["CalendarRef"];
            maxRuns?: number | null;
            /** @enum {string} */
            jitterMode?: "stable" | "random" | "spread";
            then?: components["schemas"]["Then"];
            metadata?: {
                [key: string]: string;
            };
        };
        Callback: {
            url: string;
            /**
             * @default POST
             * @enum {string}
             */
            method?: "POST" | "PUT" | "PATCH" | "GET" | "DELETE";
            /**
             * @description At most 20. Names are RFC 9110 tokens; reserved names (host, content-length, content-type, user-agent, expect, hop-by-hop: connection, keep-alive, proxy-*, te, trailer, transfer-encoding, upgrade; webhook-*, chime-*) are refused, and Authorization when callback.authToken is set. Values are visible ASCII with spaces and tabs inside (RFC 9110 §5.5).
             * @default {}
             * @example {
             *       "X-Team": "ops"
             *     }
             */
            headers?: {
                [key: string]: string;
            };
            authToken?: string;
            /**
             * @default [
             *       "2xx"
             *     ]
             */
            successStatusCodes?: (number | string)[];
            /** @default 10000 */
            timeoutMs?: number;
            successBody?: components["schemas"]["SuccessBody"];
            auth?: components["schemas"]["CallbackAuth"];
            /**
             * @description The request's media type; default `application/json` with `payload`, `text/plain` with `body`. A charset must be utf-8.
             * @example application/xml
             */
            contentType?: string;
            jwtAudience?: string;
        };
        /** @description A success status whose body does not match fails the attempt (`body_mismatch`): the body (its first 64 KiB, as UTF-8) contains `contains`, or parses as JSON with `equals` at the RFC 6901 `jsonPointer`. */
        SuccessBody: {
            contains: string;
        } | {
            jsonPointer: string;
            equals: unknown;
        };
        /** @description `{ "type": "basic", "username", "password" }` or `{ "type": "oauth2", "tokenUrl", "clientId", "clientSecret", "scope"?, "audience"? }` (client credentials, RFC 6749 §4.4). The password and the client secret are write-only and stored encrypted. Not with `authToken`. */
        CallbackAuth: {
            /** @enum {string} */
            type: "basic";
            username: string;
            password: string;
        } | {
            /** @enum {string} */
            type: "oauth2";
            tokenUrl: string;
            clientId: string;
            clientSecret: string;
            scope?: string;
            audience?: string;
        };
        Completion: {
            /** @enum {string} */
            mode: "response" | "async";
            timeoutMs?: number;
            heartbeatTimeoutMs?: number;
        };
        ResultRoute: {
            url: string;
        } | null;
        /** @description An occurrence on a weekend day or holiday of the calendar (in the calendar's time zone) is skipped (a `skipped` run, error `calendar`) or moved to the next / previous business day at the same local time. */
        CalendarRef: {
            key: string;
            /** @enum {string} */
            roll: "skip" | "next" | "previous";
        } | null;
        /** @description At most 10 links; a chain that comes back to a job already in it is refused. */
        Then: {
            /** Format: uuid */
            jobId: string;
            /** @enum {string} */
            on: "succeeded" | "failed" | "finished";
        }[] | null;
        Run: {
            /** Format: uuid */
            runId: string;
            /** Format: uuid */
            jobId: string;
            scheduledFor: string;
            /** @enum {string} */
            trigger: "schedule" | "manual" | "replay" | "notification" | "result" | "backfill" | "chain";
            /** @enum {string} */
            status: "scheduled" | "running" | "retrying" | "succeeded" | "failed" | "expired" | "skipped" | "canceled";
            attempts: number;
            nextAttemptAt: string | null;
            startedAt: string | null;
            finishedAt: string | null;
            responseStatus: number | null;
            error: string | null;
            dismissedAt: string | null;
            awaitingCompletion: boolean;
            completionDeadline: string | null;
            lastHeartbeatAt: string | null;
            progress?: unknown;
            output?: unknown;
        };
        JobPatch: {
            paused?: boolean;
            name?: string | null;
            schedule?: components["schemas"]["Schedule"];
            callback?: {
                url?: string;
                /** @enum {string} */
                method?: "POST" | "PUT" | "PATCH" | "GET" | "DELETE";
                /**
                 * @description At most 20. Names are RFC 9110 tokens; reserved names (host, content-length, content-type, user-agent, expect, hop-by-hop: connection, keep-alive, proxy-*, te, trailer, transfer-encoding, upgrade; webhook-*, chime-*) are refused, and Authorization when callback.authToken is set. Values are visible ASCII with spaces and tabs inside (RFC 9110 §5.5).
                 * @example {
                 *       "X-Team": "ops"
                 *     }
                 */
                headers?: {
                    [key: string]: string;
                };
                authToken?: string | null;
                successStatusCodes?: (number | string)[];
                timeoutMs?: number;
                successBody?: components["schemas"]["SuccessBody"];
                auth?: {
                    /** @enum {string} */
                    type: "basic";
                    username: string;
                    password?: string;
                } | {
                    /** @enum {string} */
                    type: "oauth2";
                    tokenUrl: string;
                    clientId: string;
                    clientSecret?: string;
                    scope?: string;
                    audience?: string;
                } | null;
                /**
                 * @description The request's media type; default `application/json` with `payload`, `text/plain` with `body`. A charset must be utf-8.
                 * @example application/xml
                 */
                contentType?: string | null;
                jwtAudience?: string | null;
            };
            payload?: unknown;
            /** @description A body that is not JSON, sent as is (UTF-8) instead of `payload`; ≤ 256 KiB. Not with `payload`, not for GET. */
            body?: string | null;
            flowControlKey?: string | null;
            retry?: {
                /** @enum {string} */
                strategy?: "exponential" | "linear" | "fixed" | "schedule" | "none";
                maxAttempts?: number;
                initialDelayMs?: number;
                maxDelayMs?: number;
                multiplier?: number;
                jitter?: boolean;
                /** @description strategy "schedule" only: the wait before retry n is delaysMs[n−1] (1..50 entries, each 0..86400000 ms) */
                delaysMs?: number[];
            };
            relevancyWindowMs?: number | null;
            /** @enum {string} */
            deliveryMode?: "at-least-once" | "at-most-once";
            /** @enum {string} */
            overlapPolicy?: "allow" | "skip" | "buffer-one";
            /** @enum {string} */
            catchUp?: "one" | "all" | "none";
            jitterMs?: number;
            pauseAfterFailures?: number;
            completion?: components["schemas"]["Completion"];
            onSuccess?: components["schemas"]["ResultRoute"];
            onFailure?: components["schemas"]["ResultRoute"];
            calendar?: components["schemas"]["CalendarRef"];
            maxRuns?: number | null;
            /** @enum {string} */
            jitterMode?: "stable" | "random" | "spread";
            then?: components["schemas"]["Then"];
            metadata?: {
                [key: string]: string;
            };
        };
        BackfillResult: {
            /** @description Runs created by this call */
            created: number;
            /** @description Their ids, oldest occurrence first */
            runIds: string[];
            /** @description Occurrences of the range still without a run: call again for them */
            remaining: number;
        };
        BackfillInput: {
            /**
             * Format: date-time
             * @description The first instant of the range (inclusive)
             * @example 2026-12-01T09:00:00.000Z
             */
            from: string;
            /**
             * Format: date-time
             * @description The end of the range (exclusive), not after now
             * @example 2026-12-01T09:00:00.000Z
             */
            to: string;
            /** @description Most runs this call creates (default 100) */
            limit?: number;
        };
        Attempt: {
            attempt: number;
            startedAt: string;
            finishedAt: string | null;
            durationMs: number | null;
            responseStatus: number | null;
            responseBodyExcerpt: string | null;
            responseHeaders: {
                [key: string]: string;
            } | null;
            errorClass: string | null;
            error: string | null;
            completedAt: string | null;
            /** @enum {string|null} */
            reportedStatus: "succeeded" | "failed" | null;
        };
        CompletionReport: {
            /** @enum {string} */
            status: "succeeded" | "failed";
            output?: unknown;
            error?: string;
        };
        Heartbeat: {
            progress?: unknown;
        };
        Usage: {
            /**
             * @description Start of the oldest day covered (midnight UTC), RFC 3339
             * @example 2026-11-11T00:00:00.000Z
             */
            from: string;
            /**
             * @description End of the span covered: now, RFC 3339 UTC
             * @example 2026-11-24T15:04:05.000Z
             */
            to: string;
            /** @description Every day of the span, oldest first, zeros included; runs count on the UTC day they finished */
            daily: {
                /**
                 * @description The UTC day
                 * @example 2026-11-24
                 */
                date: string;
                succeeded: number;
                failed: number;
                expired: number;
                skipped: number;
                /** @description Attempts (HTTP requests) started that day */
                attempts: number;
            }[];
            /** @description Percentiles of startedAt - scheduledFor (ms, at least 0) of the runs started in the last 24 h; null when none */
            fireLagMs: {
                p50: number;
                p99: number;
            } | null;
            jobs: {
                active: number;
                paused: number;
            };
        };
        NotificationEndpoint: {
            /** Format: uuid */
            endpointId: string;
            url: string;
            events: ("run.failed" | "run.expired" | "job.paused" | "job.completed")[];
            description: string | null;
            createdAt: string;
        };
        NotificationEndpointInput: {
            url: string;
            events: ("run.failed" | "run.expired" | "job.paused" | "job.completed")[];
            description?: string;
        };
        NotificationDelivery: {
            /** Format: uuid */
            deliveryId: string;
            /** Format: uuid */
            eventId: string;
            /** @enum {string} */
            type: "run.failed" | "run.expired" | "job.paused" | "job.completed";
            status: string;
            attempts: number;
            createdAt: string;
            nextAttemptAt: string | null;
            finishedAt: string | null;
            responseStatus: number | null;
            error: string | null;
        };
        FlowControl: {
            key: string;
            rate: components["schemas"]["FlowRate"];
            parallelism: number | null;
            paused: boolean;
            /** @description Runs of its jobs holding a slot now (in flight, or about to start) */
            inFlight: number;
            /** @description Runs of its jobs that are due and held back */
            waiting: number;
            createdAt: string;
            updatedAt: string;
        };
        /** @description At most `limit` requests started in any window of `periodMs` */
        FlowRate: {
            limit: number;
            periodMs: number;
        } | null;
        /** @description Replaces the settings: what is absent is none (paused: false) */
        FlowControlInput: {
            rate?: components["schemas"]["FlowRate"];
            parallelism?: number;
            paused?: boolean;
        };
        Calendar: {
            key: string;
            name: string | null;
            timezone: string;
            weekendDays: number[];
            holidays: string[];
            /** @description Open jobs (active or paused) that use it */
            jobs: number;
            createdAt: string;
            updatedAt: string;
        };
        /** @description Replaces the calendar: what is absent is the default (no name, weekend [0, 6]) */
        CalendarInput: {
            name?: string;
            timezone: string;
            /** @description Days of the week that are not business days, 0 = Sunday … 6 = Saturday; default [0, 6] */
            weekendDays?: number[];
            /** @description Local dates (YYYY-MM-DD), at most 1000 */
            holidays: string[];
        };
        ResultDelivery: {
            /** Format: uuid */
            deliveryId: string;
            /** Format: uuid */
            eventId: string | null;
            /** Format: uuid */
            runId: string | null;
            /** @enum {string} */
            type: "run.succeeded" | "run.failed";
            url: string;
            /** @enum {string} */
            status: "scheduled" | "running" | "retrying" | "succeeded" | "failed" | "expired" | "skipped" | "canceled";
            attempts: number;
            createdAt: string;
            nextAttemptAt: string | null;
            finishedAt: string | null;
            responseStatus: number | null;
            error: string | null;
        };
        AuditEntry: {
            entryId: string;
            at: string;
            actor: {
                /** @enum {string} */
                type: "api_key";
                keyId: string;
                prefix: string;
            } | {
                /** @enum {string} */
                type: "admin";
            } | {
                /** @enum {string} */
                type: "system";
                reason: string;
            };
            /** @enum {string} */
            action: "job.created" | "job.updated" | "job.replaced" | "job.paused" | "job.resumed" | "job.canceled" | "job.triggered" | "job.backfilled" | "jobs.bulk" | "run.replayed" | "dead_letter.dismissed" | "api_key.created" | "api_key.revoked" | "signing_secret.rotated" | "notification_endpoint.created" | "notification_endpoint.deleted" | "tenant.created" | "tenant.suspended" | "tenant.resumed" | "tenant.quotas_changed" | "flow_control.created" | "flow_control.updated" | "flow_control.deleted" | "calendar.created" | "calendar.updated" | "calendar.deleted";
            target: {
                type: string;
                id: string;
            };
            requestId: string | null;
            /** @description The names of the fields an update changed, never their values */
            changes?: string[];
        };
        CompatJobInput: {
            name: string;
            /**
             * @description 5-field cron, UTC
             * @example 0 0 * * *
             */
            cronExpr: string;
            /** @example https://example.com/hooks/report */
            handlerUrl: string;
            payload?: unknown;
            /**
             * @description ms
             * @example 10000
             */
            timeout?: number;
            /** @description retries after the first attempt */
            retries?: number;
        };
        CompatRun: {
            /** Format: uuid */
            runId: string;
            status: string;
            startedAt: string | null;
            finishedAt: string | null;
            error: string | null;
        };
        CompatJobPatch: {
            paused: boolean;
        };
    };
    responses: never;
    parameters: never;
    requestBodies: never;
    headers: never;
    pathItems: never;
}
export type $defs = Record<string, never>;
export type operations = Record<string, never>;
