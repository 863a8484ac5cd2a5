/**
 * The API's request metrics and the build info in `/metrics` (prom-client; Node only, the Workers bundle has no
 * `/metrics`): requests by method, route pattern and status, their latency per route, and `chime_build_info`.
 */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { RequestRecord } from './api/requests.ts';
import type { BuildInfo } from './build-info.ts';

/** Latency buckets, in seconds: API answers take milliseconds; a bulk change or search can take seconds. */
const LATENCY_BUCKETS_S = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/**
 * Registers `chime_http_requests_total{method,route,status}` and `chime_http_request_duration_seconds{method,route}`.
 * @returns the function that counts one answered request (`createApp`'s `onRequest`)
 */
export function createRequestMetrics(registry: Registry): (r: RequestRecord) => void {
  const registers = [registry];
  const requests = new Counter({
    name: 'chime_http_requests_total',
    help: 'API requests answered, by method, route pattern and status.',
    labelNames: ['method', 'route', 'status'] as const,
    registers,
  });
  const duration = new Histogram({
    name: 'chime_http_request_duration_seconds',
    help: 'Time from a request to its response headers, by method and route pattern.',
    labelNames: ['method', 'route'] as const,
    buckets: LATENCY_BUCKETS_S,
    registers,
  });
  return (r) => {
    requests.inc({ method: r.method, route: r.route, status: String(r.status) });
    duration.observe({ method: r.method, route: r.route }, r.durationMs / 1000);
  };
}

/** Registers `chime_build_info{version,commit} 1`. */
export function registerBuildInfo(registry: Registry, info: BuildInfo): void {
  new Gauge({
    name: 'chime_build_info',
    help: 'The running build: always 1, labelled with its version and commit.',
    labelNames: ['version', 'commit'] as const,
    registers: [registry],
  }).set({ version: info.version, commit: info.commit }, 1);
}
