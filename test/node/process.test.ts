/**
 * Transcripts against the real `chime node` process (`npx tsx src/cli.ts node`), driven through stdin and stdout.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { NodeProcess, type Reply } from './harness.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const RFC3339_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/** Start-up (up to `NodeProcess.start`'s 60 s on a loaded machine) and the exchange. */
const TIMEOUT = { timeout: 90_000 };

let proc: NodeProcess | undefined;
afterEach(() => {
  proc?.kill();
  proc = undefined;
});

async function start(): Promise<NodeProcess> {
  proc = await NodeProcess.start();
  return proc;
}

/** Ends input, expects a clean exit, and checks that stdout held nothing but `expected` reply lines. */
async function finish(p: NodeProcess, expected: number): Promise<Reply[]> {
  const exit = await p.close();
  expect(exit).toEqual({ code: 0, signal: null });
  expect(p.unterminated).toBe('');
  const replies = p.lines.map((line) => {
    const r = JSON.parse(line) as Reply; // throws on a line that is not JSON
    expect(Object.keys(r)).toEqual(['src', 'dest', 'body']);
    expect(typeof r.src).toBe('string');
    expect(typeof r.dest).toBe('string');
    expect(typeof r.body.type).toBe('string');
    expect(typeof r.body.in_reply_to).toBe('number');
    return r;
  });
  expect(replies).toHaveLength(expected);
  expect(p.stderr).toMatch(/chime node: ready/); // logs go to stderr
  return replies;
}

describe('chime node: init and schedule_job', () => {
  it('answers the PROTOCOL.md example exchange, init, and both schedule_job forms', TIMEOUT, async () => {
    const p = await start();

    // The example from PROTOCOL.md, verbatim, before any init: the node answers as the message's dest.
    const before = Date.now();
    await p.sendRaw(
      '{"src":"client","dest":"scheduler","body":{"type":"schedule_job","msg_id":1,"task":"send-email","payload":{"to":"user@example.com"},"delay_ms":60000}}',
    );
    const example = await p.nextReply();
    const after = Date.now();
    expect(example.src).toBe('scheduler');
    expect(example.dest).toBe('client');
    expect(Object.keys(example.body)).toEqual(['type', 'in_reply_to', 'job_id', 'scheduled_at']);
    expect(example.body).toMatchObject({ type: 'job_scheduled', in_reply_to: 1 });
    expect(example.body.job_id).toMatch(UUID);
    expect(example.body.scheduled_at).toMatch(RFC3339_MS);
    const due = Date.parse(example.body.scheduled_at as string);
    expect(due).toBeGreaterThanOrEqual(before + 60_000);
    expect(due).toBeLessThanOrEqual(after + 60_000);

    // The same at the example's logical time.
    await p.sendRaw(
      '{"src":"client","dest":"scheduler","body":{"type":"schedule_job","msg_id":2,"task":"send-email","payload":{"to":"user@example.com"},"delay_ms":60000,"current_time":"2026-11-22T10:00:00.000Z"}}',
    );
    const at = await p.nextReply();
    expect(at).toEqual({
      src: 'scheduler',
      dest: 'client',
      body: { type: 'job_scheduled', in_reply_to: 2, job_id: expect.stringMatching(UUID), scheduled_at: '2026-11-22T10:01:00.000Z' },
    });
    expect(at.body.job_id).not.toBe(example.body.job_id);

    expect(await p.rpc({ type: 'init', node_id: 'n1', node_ids: ['n1', 'n2'] })).toEqual({ type: 'init_ok', in_reply_to: 1 });

    // One-time job: scheduled_at = now + delay_ms (logical time, here as epoch ms).
    expect(
      await p.rpc({ type: 'schedule_job', task: 'ping', payload: null, delay_ms: 0, current_time: Date.parse('2026-11-22T12:00:00Z') }),
    ).toEqual({
      type: 'job_scheduled',
      in_reply_to: 2,
      job_id: expect.stringMatching(UUID),
      scheduled_at: '2026-11-22T12:00:00.000Z',
    });

    // Recurring job: next_run = next occurrence strictly after now, UTC.
    expect(await p.rpc({ type: 'schedule_job', task: 'report', payload: { a: [1] }, cron: '0 9 * * 1' })).toEqual({
      type: 'job_scheduled',
      in_reply_to: 3,
      job_id: expect.stringMatching(UUID),
      next_run: '2026-11-23T09:00:00.000Z',
    });
    expect(await p.rpc({ type: 'schedule_job', task: 'tick', cron: '0 * * * *' })).toMatchObject({ next_run: '2026-11-22T13:00:00.000Z' });

    await finish(p, 6);
  });
});

describe('chime node: execute_jobs', () => {
  it('runs due jobs in due order at logical time; recurring jobs move on, one-time jobs are done', TIMEOUT, async () => {
    const p = await start();
    await p.rpc({ type: 'init', node_id: 'n1', node_ids: ['n1'] });
    const id = async (body: Record<string, unknown>) =>
      (await p.rpc({ type: 'schedule_job', task: 't', payload: {}, ...body })).job_id as string;
    const cron = await id({ cron: '*/15 * * * *', current_time: '2026-11-22T10:00:00Z' }); // due 10:15, first
    const soon = await id({ delay_ms: 60_000 }); // 10:01
    const tie = await id({ delay_ms: 900_000 }); // 10:15, scheduled after the cron job
    const now = await id({ delay_ms: 0 }); // 10:00

    const run = (current_time: unknown) => p.rpc({ type: 'execute_jobs', current_time });
    expect(await run('2026-11-22T09:59:59.999Z')).toEqual({ type: 'jobs_executed', in_reply_to: 6, count: 0, jobs: [] });
    expect(await run('2026-11-22T10:00:00Z')).toEqual({ type: 'jobs_executed', in_reply_to: 7, count: 1, jobs: [now] });
    expect(await run('2026-11-22T10:15:00Z')).toMatchObject({ count: 3, jobs: [soon, cron, tie] });
    expect(await run('2026-11-22T10:29:59Z')).toMatchObject({ count: 0, jobs: [] });
    expect(await run(Date.parse('2026-11-22T10:30:00Z'))).toMatchObject({ count: 1, jobs: [cron] });
    // 10:45 and 11:00 were missed: the job runs once and moves to the next occurrence after current_time.
    expect(await run('2026-11-22T11:07:00Z')).toMatchObject({ count: 1, jobs: [cron] });
    expect(await run('2026-11-22T11:14:59Z')).toMatchObject({ count: 0 });
    // Without current_time the logical clock stays where it is.
    expect(await p.rpc({ type: 'execute_jobs' })).toMatchObject({ count: 0, jobs: [] });
    expect(await run('2026-11-22T11:15:00Z')).toMatchObject({ count: 1, jobs: [cron] });

    await finish(p, 14);
  });
});

describe('chime node: execute_job', () => {
  it('runs a job, and reports failures with backoff 2000, 4000, … until max_attempts', TIMEOUT, async () => {
    const p = await start();
    await p.rpc({ type: 'init', node_id: 'n1', node_ids: ['n1'] });
    const schedule = async (extra: Record<string, unknown> = {}) =>
      (await p.rpc({ type: 'schedule_job', task: 't', payload: null, delay_ms: 10_000, current_time: '2026-11-22T10:00:00Z', ...extra }))
        .job_id as string;

    const ok = await schedule();
    expect(await p.rpc({ type: 'execute_job', job_id: ok })).toEqual({ type: 'job_executed', in_reply_to: 3, job_id: ok });
    expect(await p.rpc({ type: 'execute_job', job_id: ok, force_fail: false })).toEqual({
      type: 'job_executed',
      in_reply_to: 4,
      job_id: ok,
    });

    const failing = await schedule();
    const fail = () => p.rpc({ type: 'execute_job', job_id: failing, force_fail: true });
    const expected = [
      [true, 2000],
      [true, 4000],
      [true, 8000],
      [true, 16000],
      [false, 32000],
      [false, 64000],
    ] as const;
    for (const [retry_scheduled, backoff_ms] of expected) {
      const body = await fail();
      expect(body).toEqual({ type: 'job_failed', in_reply_to: body.in_reply_to, job_id: failing, retry_scheduled, backoff_ms });
    }

    // retry: { base_ms, max_attempts }
    const custom = await schedule({ retry: { base_ms: 250, max_attempts: 3 } });
    const customFails = [];
    for (let i = 0; i < 3; i++) customFails.push(await p.rpc({ type: 'execute_job', job_id: custom, force_fail: true }));
    expect(customFails.map((b) => [b.retry_scheduled, b.backoff_ms])).toEqual([
      [true, 500],
      [true, 1000],
      [false, 2000],
    ]);

    // A scheduled retry is run by execute_jobs at now + backoff; the success ends the run (the count restarts).
    const retried = await schedule({ delay_ms: 3_600_000, current_time: '2026-11-22T11:00:00Z' });
    expect(await p.rpc({ type: 'execute_job', job_id: retried, force_fail: true })).toMatchObject({
      retry_scheduled: true,
      backoff_ms: 2000,
    });
    expect(await p.rpc({ type: 'execute_jobs', current_time: '2026-11-22T11:00:01.999Z' })).toMatchObject({ count: 0 });
    expect(await p.rpc({ type: 'execute_jobs', current_time: '2026-11-22T11:00:02Z' })).toMatchObject({ count: 1, jobs: [retried] });
    expect(await p.rpc({ type: 'execute_job', job_id: retried, force_fail: true })).toMatchObject({
      retry_scheduled: true,
      backoff_ms: 2000,
    });

    // An unknown job id: code 20, for plain and failing runs alike.
    for (const force_fail of [false, true]) {
      const body = await p.rpc({ type: 'execute_job', job_id: '00000000-0000-7000-8000-000000000000', force_fail });
      expect(body).toEqual({ type: 'error', in_reply_to: body.in_reply_to, code: 20, text: expect.any(String) });
    }

    await finish(p, 22);
  });
});

describe('chime node: errors', () => {
  it('answers bad input with Maelstrom error codes and keeps serving', TIMEOUT, async () => {
    const p = await start();
    let replies = 0;
    const expectError = async (body: Record<string, unknown>, code: number) => {
      replies++;
      const r = await p.rpc(body);
      expect(r).toEqual({ type: 'error', in_reply_to: r.in_reply_to, code, text: expect.any(String) });
      expect((r.text as string).length).toBeGreaterThan(0);
    };
    const ok = async (body: Record<string, unknown>) => {
      replies++;
      return p.rpc(body);
    };

    // A line that is not JSON and has no readable msg_id: nothing on stdout; the next reply answers the next message.
    await p.sendRaw('this is not json');
    await p.sendRaw('{"src":"c1","dest":"n1","body":{"type":"nonsense"}}'); // unknown type, but no msg_id to answer
    expect(await ok({ type: 'init', node_id: 'n1', node_ids: ['n1'], msg_id: 100 })).toEqual({ type: 'init_ok', in_reply_to: 100 });

    // A truncated line whose msg_id can be read: code 12.
    await p.sendRaw('{"src":"c1","dest":"n1","body":{"type":"schedule_job","msg_id":101,"task":"t"');
    replies++;
    expect(await p.nextReply()).toEqual({
      src: 'n1',
      dest: 'c1',
      body: { type: 'error', in_reply_to: 101, code: 12, text: expect.stringMatching(/not JSON/) },
    });

    // Unknown type: 10.
    await expectError({ type: 'delete_everything' }, 10);
    await expectError({ type: '__proto__' }, 10);

    // Missing or invalid fields: 12.
    await expectError({ type: 'schedule_job', payload: {}, delay_ms: 1000 }, 12); // no task
    await expectError({ type: 'schedule_job', task: '', delay_ms: 1000 }, 12);
    await expectError({ type: 'schedule_job', task: 7, delay_ms: 1000 }, 12);
    await expectError({ type: 'schedule_job', task: 't', delay_ms: -1 }, 12);
    await expectError({ type: 'schedule_job', task: 't', delay_ms: 1.5 }, 12);
    await expectError({ type: 'schedule_job', task: 't', delay_ms: '1000' }, 12);
    await expectError({ type: 'schedule_job', task: 't', delay_ms: 1000, cron: '* * * * *' }, 12); // both
    await expectError({ type: 'schedule_job', task: 't', payload: {} }, 12); // neither
    await expectError({ type: 'schedule_job', task: 't', delay_ms: 0, retry: { base_ms: 0 } }, 12);
    await expectError({ type: 'schedule_job', task: 't', delay_ms: 0, retry: { max_attempts: 0 } }, 12);
    await expectError({ type: 'schedule_job', task: 't', delay_ms: 0, retry: 'often' }, 12);
    await expectError({ type: 'execute_job' }, 12); // no job_id
    await expectError({ type: 'execute_job', job_id: 'x', force_fail: 'yes' }, 12);
    await expectError({ type: 'init', node_ids: ['n1'] }, 12); // no node_id
    await expectError({ type: 'execute_jobs', current_time: 'tomorrow' }, 12);
    await expectError({ type: 'execute_jobs', current_time: '2026-02-30T00:00:00Z' }, 12);

    // Invalid cron: 12.
    for (const cron of ['61 * * * *', '* * *', '0 0 * * * *', 'every day', '@sometimes', '', 5]) {
      await expectError({ type: 'schedule_job', task: 't', cron }, 12);
    }

    // Unknown job: 20.
    await expectError({ type: 'execute_job', job_id: 'no-such-job' }, 20);

    // Still serving, with its state intact.
    const job = await ok({ type: 'schedule_job', task: 't', delay_ms: 0, current_time: '2026-11-22T10:00:00Z' });
    expect(job).toMatchObject({ type: 'job_scheduled', scheduled_at: '2026-11-22T10:00:00.000Z' });
    expect(await ok({ type: 'execute_jobs' })).toMatchObject({ type: 'jobs_executed', count: 1, jobs: [job.job_id] });
    expect(await ok({ type: 'execute_job', job_id: job.job_id })).toMatchObject({ type: 'job_executed' });

    const all = await finish(p, replies);
    expect(all.filter((r) => r.body.type === 'error').map((r) => r.body.code)).toEqual([
      12,
      10,
      10,
      ...Array<number>(16).fill(12),
      ...Array<number>(7).fill(12),
      20,
    ]);
    expect(p.stderr).toMatch(/not answered: no src: this is not json/);
    expect(p.stderr).toMatch(/not answered: no msg_id/);
  });
});
