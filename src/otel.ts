/**
 * Traces with OpenTelemetry (README "Traces"): the Node process's tracer provider (the SDK's BasicTracerProvider with a
 * BatchSpanProcessor and the OTLP/HTTP exporter, which send JSON to `$OTEL_EXPORTER_OTLP_ENDPOINT/v1/traces`), the
 * API's server span per request and the dispatcher's tracer (src/dispatch/tracing.ts).
 *
 * Imported only by `loadTracing` (src/tracing.ts) when tracing is configured, and only by the Node process; it imports
 * the SDK packages by dynamic import inside `startTracing`, so that a bundle of the CLI (esbuild hoists a bundled
 * module's static imports of external packages to the top of the bundle) loads them only when tracing starts.
 * The provider is not registered globally: only Chime's own spans are made (no instrumentation of other libraries).
 */
import type * as OtelApi from '@opentelemetry/api';
import type { MiddlewareHandler } from 'hono';
import type { AppEnv } from './api/env.ts';
import { answeringRoute } from './api/requests.ts';
import type { DispatchTracer, SpanAttributes, TraceSpan } from './dispatch/tracing.ts';
import type { Tracing, TracingOptions } from './tracing.ts';

/** Name and version of the instrumentation scope of Chime's spans. */
const SCOPE = 'chime';
/**
 * Longest wait at shutdown for the last export, in ms: a collector that does not answer must not hold a draining
 * process past its orchestrator's patience (the exporter's own timeout, OTEL_EXPORTER_OTLP_TIMEOUT, is 10 s).
 */
const SHUTDOWN_MAX_MS = 5_000;
/** `service.name` unless OTEL_SERVICE_NAME (or `service.name` in OTEL_RESOURCE_ATTRIBUTES) says otherwise. */
const DEFAULT_SERVICE_NAME = 'chime';

/**
 * Starts the tracer provider. The SDK reads the standard variables: `OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT`, `_HEADERS`,
 * `_TIMEOUT`, `_COMPRESSION`, `_CERTIFICATE`, `_CLIENT_CERTIFICATE`, `_CLIENT_KEY`; `OTEL_SERVICE_NAME`,
 * `OTEL_RESOURCE_ATTRIBUTES`; `OTEL_TRACES_SAMPLER[_ARG]`; `OTEL_BSP_SCHEDULE_DELAY`, `OTEL_BSP_MAX_QUEUE_SIZE`,
 * `OTEL_BSP_MAX_EXPORT_BATCH_SIZE`, `OTEL_BSP_EXPORT_TIMEOUT`; the span limits (`OTEL_SPAN_*_LIMIT`).
 * @returns the API's middleware, the dispatcher's tracer and the provider's shutdown
 */
export async function startTracing(opts: TracingOptions): Promise<Tracing> {
  const [api, core, resources, sdk, otlp] = await Promise.all([
    import('@opentelemetry/api'),
    import('@opentelemetry/core'),
    import('@opentelemetry/resources'),
    import('@opentelemetry/sdk-trace-base'),
    import('@opentelemetry/exporter-trace-otlp-http'),
  ]);
  // The SDK's own reports (a failed export) go to the process's log; the diagnostic logger is the API's one global.
  api.diag.setLogger(
    {
      error: (message, ...args) => opts.log('error', `OpenTelemetry: ${diagText(message, args)}`),
      warn: (message, ...args) => opts.log('warn', `OpenTelemetry: ${diagText(message, args)}`),
      info: () => {},
      debug: () => {},
      verbose: () => {},
    },
    api.DiagLogLevel.WARN,
  );
  const resource = resources
    .defaultResource()
    .merge(resources.resourceFromAttributes({ 'service.name': DEFAULT_SERVICE_NAME, 'service.version': opts.serviceVersion }))
    .merge(resources.detectResources({ detectors: [resources.envDetector] }));
  const provider = new sdk.BasicTracerProvider({
    resource,
    spanProcessors: [new sdk.BatchSpanProcessor(new otlp.OTLPTraceExporter())],
  });
  const tracer = provider.getTracer(SCOPE, opts.serviceVersion);
  const propagator = new core.W3CTraceContextPropagator();

  const dispatchTracer: DispatchTracer = {
    startSpan(name, start) {
      const links: OtelApi.Link[] = [];
      for (const link of start.links ?? []) {
        const context = link.traceParent ? core.parseTraceParent(link.traceParent) : null;
        if (context) links.push({ context, attributes: definedAttributes(link.attributes) });
      }
      const span = tracer.startSpan(
        name,
        {
          kind: start.kind === 'client' ? api.SpanKind.CLIENT : api.SpanKind.INTERNAL,
          attributes: definedAttributes(start.attributes),
          links,
          root: true,
        },
        api.ROOT_CONTEXT,
      );
      return traceSpan(span, api);
    },
  };

  const requestMiddleware: MiddlewareHandler<AppEnv> = async (c, next) => {
    const parent = propagator.extract(api.ROOT_CONTEXT, c.req.raw.headers, HEADERS_GETTER);
    const method = c.req.method;
    const route = answeringRoute(c)?.path;
    const url = new URL(c.req.url);
    const span = tracer.startSpan(
      route ? `${method} ${route}` : method,
      {
        kind: api.SpanKind.SERVER,
        attributes: definedAttributes({
          'http.request.method': method,
          'http.route': route,
          'url.path': url.pathname,
          'url.scheme': url.protocol.slice(0, -1),
          'chime.request_id': c.var.requestId,
        }),
      },
      parent,
    );
    c.set('traceParent', traceParentOf(span.spanContext(), api));
    try {
      await next();
    } finally {
      const status = c.res.status;
      span.setAttribute('http.response.status_code', status);
      if (c.var.tenantId) span.setAttribute('chime.tenant_id', c.var.tenantId);
      // Server spans fail on 5xx only (HTTP semantic conventions): a 4xx is the client's.
      if (status >= 500) {
        span.setAttribute('error.type', String(status));
        if (c.error) span.recordException(c.error);
        span.setStatus({ code: api.SpanStatusCode.ERROR });
      }
      span.end();
    }
  };

  return {
    requestMiddleware,
    dispatchTracer,
    async shutdown() {
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<void>((resolve) => {
        timer = setTimeout(() => {
          opts.log('warn', `OpenTelemetry: the last export did not finish within ${SHUTDOWN_MAX_MS} ms; its spans are dropped`);
          resolve();
        }, SHUTDOWN_MAX_MS);
      });
      await Promise.race([
        provider.shutdown().catch((err: unknown) => opts.log('warn', `OpenTelemetry: shutdown failed: ${String(err)}`)),
        late,
      ]);
      clearTimeout(timer);
    },
  };
}

/** Reads W3C Trace Context headers from a Fetch API `Headers` (the propagator's TextMapGetter). */
const HEADERS_GETTER: OtelApi.TextMapGetter<Headers> = {
  keys: (headers) => [...headers.keys()],
  get: (headers, key) => headers.get(key) ?? undefined,
};

/**
 * The W3C Trace Context `traceparent` of a span context: version `00`, the trace and span ids (lower-case hex, as the
 * SDK keeps them) and the flags, `01` when sampled, else `00`.
 */
function traceParentOf(ctx: OtelApi.SpanContext, api: typeof OtelApi): string {
  return `00-${ctx.traceId}-${ctx.spanId}-${ctx.traceFlags & api.TraceFlags.SAMPLED ? '01' : '00'}`;
}

/** An SDK span as the engine's TraceSpan. */
function traceSpan(span: OtelApi.Span, api: typeof OtelApi): TraceSpan {
  return {
    traceParent: traceParentOf(span.spanContext(), api),
    setAttributes: (attributes) => span.setAttributes(definedAttributes(attributes)),
    fail(description, err) {
      if (err !== undefined) span.recordException(err instanceof Error ? err : String(err));
      span.setStatus({ code: api.SpanStatusCode.ERROR, message: description });
    },
    end: () => span.end(),
  };
}

/** `attributes` without its undefined values. */
function definedAttributes(attributes: SpanAttributes | undefined): OtelApi.Attributes {
  const out: OtelApi.Attributes = {};
  for (const [k, v] of Object.entries(attributes ?? {})) if (v !== undefined) out[k] = v;
  return out;
}

/**
 * A diagnostic message as one line: the SDK reports a failed export as the error serialized to JSON, of which the
 * message is kept (`connect ECONNREFUSED 127.0.0.1:4318`); other arguments follow as text.
 */
function diagText(message: string, args: unknown[]): string {
  let text = message;
  try {
    const parsed = JSON.parse(message) as { message?: unknown } | null;
    if (typeof parsed?.message === 'string') text = parsed.message;
  } catch {
    // plain text
  }
  const rest = args.map((a) => (a instanceof Error ? a.message : typeof a === 'string' ? a : JSON.stringify(a)));
  return [text, ...rest].join(' ');
}
