/**
 * Traces with OpenTelemetry (README "Traces"), on every database target: a real Chime process exporting to a small
 * OTLP/HTTP receiver on 127.0.0.1 (the exporter sends OTLP JSON to `/v1/traces`) and one job followed end to end: the
 * server span of `POST /v1/jobs` (continuing the client's `traceparent`), the claim, the callback attempt's client span
 * (whose id the callback's `traceparent` header names, linked to the creating request and the claim) and the finish
 * (linked to the attempt). Without the variables, no SDK is loaded and callbacks carry no `traceparent`.
 */
import { readdir, readFile } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { redactedUrl } from '../../src/dispatch/tracing.ts';
import { loadTracing, tracingEndpoint } from '../../src/tracing.ts';
import { createTestTenant, type TestTenant } from '../support/api.ts';
import { CHIME_BUILD_DIR } from '../support/build.ts';
import { type ChimeProcess, startChime } from '../support/chime-process.ts';
import { DATABASE_TARGETS, type FreshDatabase, freshDatabase } from '../support/databases.ts';
import { eventually } from '../support/eventually.ts';
import { type Receiver, startReceiver } from '../support/receiver.ts';

/** OTLP JSON's AnyValue, as far as Chime's attributes go. */
type AnyValue = { stringValue?: string; intValue?: string | number; boolValue?: boolean; doubleValue?: number };
type KeyValue = { key: string; value: AnyValue };
type OtlpLink = { traceId: string; spanId: string; attributes?: KeyValue[] };
type OtlpSpan = {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes?: KeyValue[];
  links?: OtlpLink[];
  status?: { code?: number };
};
/** A received span with its attributes as a plain object and its resource's. */
type Span = OtlpSpan & { attrs: Record<string, unknown>; resource: Record<string, unknown> };

/** OTLP SpanKind values (opentelemetry-proto trace.proto). */
const KIND = { internal: 1, server: 2, client: 3 } as const;

const anyValue = (v: AnyValue): unknown =>
  v.stringValue ?? (v.intValue !== undefined ? Number(v.intValue) : undefined) ?? v.boolValue ?? v.doubleValue;
const attrsOf = (kvs: KeyValue[] | undefined): Record<string, unknown> =>
  Object.fromEntries((kvs ?? []).map((kv) => [kv.key, anyValue(kv.value)]));

/** A minimal OTLP/HTTP trace receiver: accepts JSON `POST /v1/traces` and keeps every span it is sent. */
async function startOtlpReceiver(): Promise<{ url: string; spans: Span[]; requests: number; close(): Promise<void> }> {
  const spans: Span[] = [];
  const state = { requests: 0 };
  const server = http.createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (d) => (body += d));
    req.on('end', () => {
      if (req.method !== 'POST' || req.url !== '/v1/traces' || !String(req.headers['content-type']).startsWith('application/json')) {
        res.writeHead(404).end();
        return;
      }
      state.requests++;
      const parsed = JSON.parse(body) as {
        resourceSpans?: { resource?: { attributes?: KeyValue[] }; scopeSpans?: { spans?: OtlpSpan[] }[] }[];
      };
      for (const rs of parsed.resourceSpans ?? []) {
        const resource = attrsOf(rs.resource?.attributes);
        for (const ss of rs.scopeSpans ?? []) for (const s of ss.spans ?? []) spans.push({ ...s, attrs: attrsOf(s.attributes), resource });
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    spans,
    get requests() {
      return state.requests;
    },
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

/** The parts of a W3C `traceparent` header (version 00), or null when it is not one. */
function parseTraceParent(h: string | string[] | undefined): { traceId: string; parentId: string; flags: string } | null {
  const m = typeof h === 'string' ? /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/.exec(h) : null;
  return m ? { traceId: m[1]!, parentId: m[2]!, flags: m[3]! } : null;
}

describe('loading tracing', () => {
  it('imports nothing without an OTLP endpoint, and the OpenTelemetry module with one', async () => {
    let imported = 0;
    const load = async () => {
      imported++;
      return {
        startTracing: async () => ({
          requestMiddleware: async () => {},
          dispatchTracer: { startSpan: () => null as never },
          shutdown: async () => {},
        }),
      };
    };
    const opts = { serviceVersion: 'test', log: () => {} };
    expect(await loadTracing({}, opts, load)).toBeNull();
    expect(await loadTracing({ OTEL_EXPORTER_OTLP_ENDPOINT: '' }, opts, load)).toBeNull();
    expect(await loadTracing({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://x', OTEL_SDK_DISABLED: 'true' }, opts, load)).toBeNull();
    expect(imported).toBe(0);
    expect(await loadTracing({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://x/v1/traces' }, opts, load)).not.toBeNull();
    expect(imported).toBe(1);
    expect(tracingEndpoint({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://a', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://b' })).toBe('http://b');
  });

  it("names a callback URL in spans without its query's values", () => {
    expect(redactedUrl('https://example.com/hook?token=s3cret&x=1#f')).toBe('https://example.com/hook?token=REDACTED&x=REDACTED');
    expect(redactedUrl('http://127.0.0.1:8080/plain')).toBe('http://127.0.0.1:8080/plain');
    expect(redactedUrl('not a url?secret=1')).toBe('not a url');
  });

  it('leaves the SDK to a dynamic import in the built CLI: a static one would load it in every process', async () => {
    // The CLI and the chunks its commands import, as one text.
    const dir = new URL(`../../${CHIME_BUILD_DIR}/`, import.meta.url);
    const files = (await readdir(dir)).filter((f) => f.endsWith('.mjs'));
    expect(files).toContain('cli.mjs');
    const bundle = (await Promise.all(files.map((f) => readFile(new URL(f, dir), 'utf8')))).join('\n');
    expect(bundle.match(/(?:\bfrom\s*|^import\s*)["']@opentelemetry\/[^"']+["']/gm) ?? []).toEqual([]);
    expect(bundle).toContain('import("@opentelemetry/sdk-trace-base")');
  });
});

describe.each(DATABASE_TARGETS)('traces on $kind', (target) => {
  let db: FreshDatabase;
  let chime: ChimeProcess;
  let receiver: Receiver;
  let otlp: Awaited<ReturnType<typeof startOtlpReceiver>>;
  let tenant: TestTenant;

  beforeAll(async () => {
    db = await freshDatabase(target);
    otlp = await startOtlpReceiver();
    receiver = await startReceiver();
    chime = await startChime({
      ...db.env,
      OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url,
      OTEL_SERVICE_NAME: 'chime-traces-test',
      // Export within 100 ms of a span's end (the SDK's default is 5 s).
      OTEL_BSP_SCHEDULE_DELAY: '100',
    });
    tenant = await createTestTenant(chime.url, 'traces');
  });
  afterAll(async () => {
    const code = await chime?.stop();
    await receiver?.close();
    await otlp?.close();
    await db?.drop();
    expect(code).toBe(0);
  });

  it("traces one job: the request that created it, its claim, the attempt the callback's traceparent names, the finish", async () => {
    // The client's own trace: the server span continues it (W3C Trace Context).
    const clientTraceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    const clientSpanId = '00f067aa0ba902b7';
    const created = await tenant.api.post(
      '/v1/jobs',
      { schedule: { type: 'delay', delayMs: 0 }, callback: { url: `${receiver.url}/traced?token=secret-value` }, payload: { n: 1 } },
      { traceparent: `00-${clientTraceId}-${clientSpanId}-01` },
    );
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const jobId: string = created.body.jobId;
    const requestId = created.headers.get('x-request-id');

    const [callback] = await receiver.waitFor(1);
    const header = parseTraceParent(callback!.headers.traceparent);
    expect(header, `traceparent header: ${String(callback!.headers.traceparent)}`).not.toBeNull();
    expect(header!.flags).toBe('01');

    const spans = otlp.spans;
    const request = await eventually(() => spans.find((s) => s.kind === KIND.server && s.name === 'POST /v1/jobs'), {
      what: 'the server span of POST /v1/jobs',
    });
    expect(request.traceId).toBe(clientTraceId);
    expect(request.parentSpanId).toBe(clientSpanId);
    expect(request.attrs).toMatchObject({
      'http.request.method': 'POST',
      'http.route': '/v1/jobs',
      'http.response.status_code': 201,
      'chime.tenant_id': tenant.tenantId,
      'chime.request_id': requestId,
    });
    expect(request.resource['service.name']).toBe('chime-traces-test');

    const attempt = await eventually(() => spans.find((s) => s.kind === KIND.client && s.attrs['chime.job_id'] === jobId), {
      what: "the callback attempt's client span",
    });
    // The callback's traceparent names the attempt span.
    expect(attempt.spanId).toBe(header!.parentId);
    expect(attempt.traceId).toBe(header!.traceId);
    expect(attempt.name).toBe('POST');
    expect(attempt.attrs).toMatchObject({
      'http.request.method': 'POST',
      'http.response.status_code': 200,
      'url.full': `${receiver.url}/traced?token=REDACTED`,
      'chime.run_id': callback!.headers['chime-run-id'],
      'chime.job_id': jobId,
      'chime.attempt': 1,
    });
    // Linked to the request that created the job, and to the claim that took the run.
    const linkTo = (s: Span) => attempt.links?.find((l) => l.traceId === s.traceId && l.spanId === s.spanId);
    expect(linkTo(request), JSON.stringify(attempt.links)).toBeDefined();
    expect(attrsOf(linkTo(request)!.attributes)['chime.link']).toBe('job.created');
    const claim = spans.find((s) => s.name === 'chime.claim' && linkTo(s));
    expect(claim, 'the claim span the attempt links to').toBeDefined();
    expect(claim!.kind).toBe(KIND.internal);
    expect(claim!.attrs['chime.claim.runs']).toBeGreaterThanOrEqual(1);

    // The finish that recorded the attempt links to it.
    const finish = await eventually(
      () =>
        spans.find((s) => s.name === 'chime.finish' && s.links?.some((l) => l.spanId === attempt.spanId && l.traceId === attempt.traceId)),
      { what: 'the finish span linked to the attempt' },
    );
    expect(finish.kind).toBe(KIND.internal);
    expect(finish.attrs['chime.finish.recorded']).toBeGreaterThanOrEqual(1);
  });
});

describe('without OTEL_EXPORTER_OTLP_ENDPOINT', () => {
  let db: FreshDatabase;
  let chime: ChimeProcess;
  let receiver: Receiver;

  beforeAll(async () => {
    db = await freshDatabase({ kind: 'pglite' });
    receiver = await startReceiver();
    chime = await startChime(db.env);
  });
  afterAll(async () => {
    const code = await chime?.stop();
    await receiver?.close();
    await db?.drop();
    expect(code).toBe(0);
  });

  it('delivers callbacks without a traceparent header and logs no tracing', async () => {
    const tenant = await createTestTenant(chime.url, 'untraced');
    const created = await tenant.api.post(
      '/v1/jobs',
      { schedule: { type: 'delay', delayMs: 0 }, callback: { url: `${receiver.url}/untraced` } },
      { traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01' },
    );
    expect(created.status).toBe(201);
    const [callback] = await receiver.waitFor(1);
    expect(callback!.headers['chime-job-id']).toBe(created.body.jobId);
    expect(callback!.headers.traceparent).toBeUndefined();
    expect(chime.output()).not.toContain('tracing');
  });
});
