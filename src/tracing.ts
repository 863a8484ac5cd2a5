/**
 * Whether a Node process traces, and loading what it traces with (README "Traces"). Tracing is on when the standard
 * OpenTelemetry variable `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` or `OTEL_EXPORTER_OTLP_ENDPOINT` is set (and
 * `OTEL_SDK_DISABLED` is not `true`); only then is the OpenTelemetry SDK imported (src/otel.ts, by dynamic import), so a
 * process without them loads none of it and its API and dispatcher make no spans. Nothing here imports the SDK.
 */
import type { MiddlewareHandler } from 'hono';
import type { AppEnv } from './api/env.ts';
import type { DispatchTracer } from './dispatch/tracing.ts';

/** A running tracer provider: what the API and the dispatcher are given, and its shutdown. */
export type Tracing = {
  /** The API's server span per request (`createApp`'s `deps.tracing`). */
  requestMiddleware: MiddlewareHandler<AppEnv>;
  /** The dispatcher's spans: claims, finishes, callback attempts (`createDispatcher`'s `deps.tracer`). */
  dispatchTracer: DispatchTracer;
  /** Ends the spans' export: exports what is buffered (waiting at most 5 s), then stops. Never rejects. */
  shutdown(): Promise<void>;
};

/** What starting tracing needs from the process. */
export type TracingOptions = {
  /** `service.version` of the spans' resource (the package's version). */
  serviceVersion: string;
  /** Where the SDK's own warnings and errors go (an export that failed, a malformed variable). */
  log: (level: 'warn' | 'error', message: string) => void;
};

/**
 * The OTLP endpoint that turns tracing on in `env`: `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, else
 * `OTEL_EXPORTER_OTLP_ENDPOINT` (empty counts as unset); null when neither is set or `OTEL_SDK_DISABLED` is `true`
 * (the OpenTelemetry SDK environment variable specification).
 */
export function tracingEndpoint(env: Record<string, string | undefined>): string | null {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return null;
  return env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim() || env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim() || null;
}

/**
 * Starts tracing when `env` configures it (`tracingEndpoint`), by importing src/otel.ts (and with it the SDK) through
 * `load`; the SDK reads its standard variables itself (endpoint, headers, timeout, batch delays, sampler, resource).
 * @param load imports the OpenTelemetry module (injected in tests)
 * @returns the running tracing, or null (nothing imported) when tracing is not configured
 * @throws what the SDK throws for a configuration it cannot start with
 */
export async function loadTracing(
  env: Record<string, string | undefined>,
  opts: TracingOptions,
  load: () => Promise<{ startTracing(opts: TracingOptions): Promise<Tracing> }> = () => import('./otel.ts'),
): Promise<Tracing | null> {
  if (tracingEndpoint(env) === null) return null;
  return (await load()).startTracing(opts);
}
