/**
 * 10,000 messages piped into the real `chime node` process at once: every one must be answered, in order, correctly.
 * Correctness only, no timing assertions; the wait is bounded by a deadline.
 */
import { afterEach, expect, it } from 'vitest';
import { NodeProcess, type Reply } from './harness.ts';

const N = 10_000;
const T0 = Date.parse('2026-11-22T10:00:00Z');

let proc: NodeProcess | undefined;
afterEach(() => proc?.kill());

/** Message i (1-based), and the reply type (and error code) it must get. Ten kinds, in turn. */
function message(i: number): { line: string; type: string; code?: number } {
  const env = (body: Record<string, unknown>) => JSON.stringify({ src: 'c1', dest: 'n1', body: { msg_id: i, ...body } });
  switch (i % 10) {
    case 1:
      return {
        line: env({ type: 'schedule_job', task: `t${i}`, payload: { i }, delay_ms: i, current_time: T0 + i * 1000 }),
        type: 'job_scheduled',
      };
    case 2:
      return { line: env({ type: 'schedule_job', task: `c${i}`, payload: null, cron: '*/5 * * * *' }), type: 'job_scheduled' };
    case 3:
      return { line: env({ type: 'execute_jobs', current_time: T0 + i * 1000 }), type: 'jobs_executed' };
    case 4:
      return { line: env({ type: 'execute_job', job_id: `missing-${i}` }), type: 'error', code: 20 };
    case 5:
      return { line: env({ type: 'schedule_job', task: 't' }).slice(0, -3), type: 'error', code: 12 }; // truncated
    case 6:
      return { line: env({ type: 'no_such_type' }), type: 'error', code: 10 };
    case 7:
      return { line: env({ type: 'schedule_job', payload: {}, delay_ms: 5 }), type: 'error', code: 12 };
    case 8:
      return { line: env({ type: 'schedule_job', task: 't', cron: '99 * * * *' }), type: 'error', code: 12 };
    case 9:
      return { line: env({ type: 'execute_jobs' }), type: 'jobs_executed' };
    default:
      return { line: env({ type: 'init', node_id: 'n1', node_ids: ['n1'] }), type: 'init_ok' };
  }
}

it('answers all of 10,000 pipelined messages, in order, each correctly', { timeout: 120_000 }, async () => {
  proc = await NodeProcess.start();
  const p = proc;
  const expected = Array.from({ length: N }, (_, k) => message(k + 1));
  for (const m of expected) await p.sendRaw(m.line);

  const all = await p.waitFor(() => p.lines.length >= N, 90_000);
  expect(all, `only ${p.lines.length} of ${N} replies arrived; stderr:\n${p.stderr.slice(-2000)}`).toBe(true);
  expect(await p.close()).toEqual({ code: 0, signal: null });
  expect(p.lines).toHaveLength(N);
  expect(p.unterminated).toBe('');

  const replies = p.lines.map((line) => JSON.parse(line) as Reply);
  const scheduled = new Set<string>();
  const oneTime = new Set<string>();
  const ranOnce = new Set<string>();
  let executed = 0;
  replies.forEach((r, k) => {
    const m = expected[k]!;
    expect(r.src).toBe('n1');
    expect(r.dest).toBe('c1');
    expect(r.body.in_reply_to).toBe(k + 1);
    expect(r.body.type).toBe(m.type);
    if (m.code !== undefined) expect(r.body.code).toBe(m.code);
    if (r.body.type === 'job_scheduled') {
      const id = r.body.job_id as string;
      expect(scheduled.has(id)).toBe(false);
      scheduled.add(id);
      if ('scheduled_at' in r.body) oneTime.add(id);
    }
    if (r.body.type === 'jobs_executed') {
      const jobs = r.body.jobs as string[];
      expect(r.body.count).toBe(jobs.length);
      executed += jobs.length;
      for (const id of jobs) {
        expect(scheduled.has(id)).toBe(true); // only jobs scheduled before
        if (oneTime.has(id)) {
          expect(ranOnce.has(id)).toBe(false); // a one-time job runs once
          ranOnce.add(id);
        }
      }
    }
  });
  expect(scheduled.size).toBe(2 * (N / 10));
  // Every one-time job (due ≤ 10 s after it was scheduled, the clock moving 1 s a message) has run by the end
  // except the last one, scheduled at message 9991 and due after the last execute_jobs' time (message 9993).
  expect(ranOnce.size).toBe(oneTime.size - 1);
  expect(executed).toBeGreaterThan(ranOnce.size);
});
