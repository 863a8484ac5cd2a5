/**
 * Parent side of the benchmark receiver: forks receiver-process.ts (node --import tsx) and talks to it over IPC.
 * One receiver serves every system of a bench run; `reset()` starts a new session before each workload.
 */
import { type ChildProcess, fork } from 'node:child_process';
import type { LagSummary } from './stats.ts';

/** Messages to the receiver process. */
export type ReceiverRequest =
  | { op: 'reset'; delayMs: number }
  | { op: 'watch'; pids: number[] }
  | { op: 'stats' }
  | { op: 'lags' }
  | { op: 'listen'; count: number }
  | { op: 'tags' };

/** Replies from the receiver process; `seq` 0 is the start-up message `{ port }`. */
export type ReceiverReply = { seq: number; ok: true; value: unknown } | { seq: number; ok: false; error: string };

/** What the receiver saw in the current session. Times are epoch ms. */
export type ReceiverStats = {
  /** Distinct callbacks (by `webhook-id` / `bench-id`). */
  unique: number;
  /** Requests, duplicates included. */
  total: number;
  firstAt: number | null;
  lastAt: number | null;
  /** CPU seconds of the watched pids sampled when the session's first callback arrived (null before it). */
  cpuAtFirst: Record<number, number> | null;
};

/** What the receiver saw of the callbacks to `/hook/<tag>` in the current session. Times are epoch ms. */
export type TagStats = {
  /** Distinct callbacks. */
  unique: number;
  /** First and last request (duplicates included). */
  firstAt: number | null;
  lastAt: number | null;
  /** Fire lags of the first deliveries. */
  lags: LagSummary;
};

export type BenchReceiver = {
  /** Base URL, e.g. `http://127.0.0.1:40123`; callbacks go to `${url}/hook`. */
  url: string;
  pid: number;
  /** Starts a new session: forgets everything, answers each callback after `delayMs` (default 0). */
  reset(delayMs?: number): Promise<void>;
  /** Processes whose CPU time is sampled at the session's first callback. */
  watch(pids: number[]): Promise<void>;
  stats(): Promise<ReceiverStats>;
  /** Fire lags of the session's first deliveries. */
  lags(): Promise<LagSummary>;
  /**
   * Base URLs of `count` more destinations (`http://127.0.0.1:<port>`, each its own port, none of them `url`'s) served
   * like `url`, in the same session; opened on first request and kept, so the same `count` gives the same URLs.
   */
  destinations(count: number): Promise<string[]>;
  /** Per tag, the session's callbacks to `/hook/<tag>` (on any destination). */
  tags(): Promise<Record<string, TagStats>>;
  close(): Promise<void>;
};

const HERE = new URL('.', import.meta.url).pathname;

/**
 * Forks the receiver process and resolves once it listens.
 * @throws Error when the process exits or does not report its port within 30 s
 */
export async function startBenchReceiver(): Promise<BenchReceiver> {
  const child: ChildProcess = fork(`${HERE}receiver-process.ts`, [], {
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  let seq = 0;
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('the bench receiver did not start within 30 s')), 30_000);
    child.once('exit', (code) => reject(new Error(`the bench receiver exited with ${code}`)));
    child.on('message', (m: ReceiverReply) => {
      if (m.seq === 0 && m.ok) {
        clearTimeout(timer);
        resolve((m.value as { port: number }).port);
        return;
      }
      const p = pending.get(m.seq);
      if (!p) return;
      pending.delete(m.seq);
      if (m.ok) p.resolve(m.value);
      else p.reject(new Error(`receiver: ${m.error}`));
    });
  });
  const call = <T>(req: ReceiverRequest): Promise<T> =>
    new Promise<T>((resolve, reject) => {
      const s = ++seq;
      pending.set(s, { resolve: resolve as (v: unknown) => void, reject });
      child.send({ ...req, seq: s });
    });
  return {
    url: `http://127.0.0.1:${port}`,
    pid: child.pid!,
    reset: (delayMs = 0) => call({ op: 'reset', delayMs }),
    watch: (pids) => call({ op: 'watch', pids }),
    stats: () => call({ op: 'stats' }),
    lags: () => call({ op: 'lags' }),
    destinations: async (count) => (await call<number[]>({ op: 'listen', count })).map((p) => `http://127.0.0.1:${p}`),
    tags: () => call({ op: 'tags' }),
    async close() {
      if (child.exitCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      child.disconnect();
      const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(timer);
    },
  };
}
