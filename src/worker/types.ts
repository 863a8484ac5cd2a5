/**
 * The few Cloudflare Workers runtime types Chime uses, declared here rather than through
 * `@cloudflare/workers-types` (whose globals would clash with `@types/node` in one tsconfig). Shapes follow the
 * Workers runtime API reference: `ExecutionContext` and `ScheduledController` of the module syntax
 * (https://developers.cloudflare.com/workers/runtime-apis/handlers/), and the Hyperdrive binding
 * (https://developers.cloudflare.com/hyperdrive/configuration/connect-to-postgres/).
 */

/** Lets a handler keep work running after it returned (`waitUntil`). */
export interface ExecutionContext {
  waitUntil(promise: Promise<unknown>): void;
  passThroughOnException(): void;
}

/** What a Cron Trigger passes to `scheduled`: the cron that fired and its time (epoch ms, UTC). */
export interface ScheduledController {
  readonly cron: string;
  readonly scheduledTime: number;
  noRetry(): void;
}

/** A Hyperdrive binding: a pooled connection string to the origin PostgreSQL, valid for this invocation. */
export interface Hyperdrive {
  readonly connectionString: string;
}

/**
 * The Worker's `env`: the Hyperdrive binding, plus vars and secrets as strings (the same `CHIME_*` names as the
 * Node process's environment, see src/config.ts and src/worker/config.ts).
 */
export type WorkerEnv = {
  HYPERDRIVE?: Hyperdrive;
  [name: string]: unknown;
};
