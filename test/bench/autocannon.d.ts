/** The part of autocannon 9's programmatic API the bench uses (the package ships no types). */
declare module 'autocannon' {
  type Percentiles = {
    average: number;
    mean: number;
    min: number;
    max: number;
    p50: number;
    p90: number;
    p99: number;
    p99_9: number;
    total: number;
  };
  export type Result = {
    /** Seconds. */
    duration: number;
    errors: number;
    timeouts: number;
    non2xx: number;
    '2xx': number;
    /** Milliseconds. */
    latency: Percentiles;
    /** Requests per second (per sample), `total` requests completed. */
    requests: Percentiles & { sent: number };
  };
  export type Options = {
    url: string;
    method?: string;
    headers?: Record<string, string>;
    body?: string;
    connections?: number;
    /** Seconds. */
    duration?: number;
  };
  export default function autocannon(opts: Options): Promise<Result>;
}
