/**
 * What the dispatch engine asks of a tracer: spans for its claims, finishes and callback attempts (README "Traces").
 * An interface, not OpenTelemetry's API, so that the engine and the Workers bundle import nothing of it: the Node
 * process entry passes an OpenTelemetry-backed tracer (src/otel.ts) when tracing is configured, and nothing otherwise,
 * in which case the engine makes no span and pays one `undefined` check per claim, finish and attempt.
 */

/** Span attribute values (OpenTelemetry's scalar attribute types); an undefined value is left out. */
export type SpanAttributes = Record<string, string | number | boolean | undefined>;

/**
 * A link from a span to another span, named by that span's W3C Trace Context `traceparent`
 * (https://www.w3.org/TR/trace-context/#traceparent-header: `00-<32 hex trace id>-<16 hex span id>-<2 hex flags>`).
 * A null, absent or malformed `traceParent` makes no link.
 */
export type SpanLink = { traceParent: string | null | undefined; attributes?: SpanAttributes };

/** How a span starts: its kind (OpenTelemetry SpanKind: a claim or finish is `internal`, a callback `client`). */
export type SpanStart = { kind: 'internal' | 'client'; attributes?: SpanAttributes; links?: readonly SpanLink[] };

/** A started span: ended exactly once, by `end()`. */
export interface TraceSpan {
  /**
   * The span's W3C `traceparent` (version `00`, lower-case hex; flags `01` when sampled): the value a request made
   * within it carries, and what a link to it names.
   */
  readonly traceParent: string;
  /** Adds or replaces attributes. */
  setAttributes(attributes: SpanAttributes): void;
  /** Marks the span failed (status ERROR, `description` its message), recording `err` as an exception event when given. */
  fail(description: string, err?: unknown): void;
  /** Ends the span now; later calls do nothing. */
  end(): void;
}

/** Starts spans. Each span is the root of its own trace; it refers to the spans it follows from by links. */
export interface DispatchTracer {
  startSpan(name: string, start: SpanStart): TraceSpan;
}

/**
 * The callback URL as a span's `url.full` (OpenTelemetry HTTP semantic conventions): credentials are never there (a
 * callback URL may not have any), the fragment is dropped (refused anyway), and every query parameter's value is
 * replaced by `REDACTED`, since tenants may carry tokens in it. Unparseable text is returned as its part before `?`.
 */
export function redactedUrl(url: string): string {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return url.split(/[?#]/, 1)[0]!;
  }
  u.username = '';
  u.password = '';
  u.hash = '';
  if (u.search !== '') {
    const names = [...u.searchParams.keys()];
    u.search = names.map((n) => `${encodeURIComponent(n)}=REDACTED`).join('&');
  }
  return u.href;
}
