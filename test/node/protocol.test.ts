import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/domain/clock.ts';
import { runNodeProtocol } from '../../src/node/index.ts';
import { ChimeNode } from '../../src/node/node.ts';
import { ProtocolError, parseLine, parseTime, reply } from '../../src/node/protocol.ts';

describe('parseTime', () => {
  it.each([
    ['2026-11-22T10:00:00Z', Date.UTC(2026, 10, 22, 10)],
    ['2026-11-22T10:00:00.250Z', Date.UTC(2026, 10, 22, 10, 0, 0, 250)],
    ['2026-11-22t10:00:00z', Date.UTC(2026, 10, 22, 10)],
    ['2026-11-22 10:00:00Z', Date.UTC(2026, 10, 22, 10)],
    ['2026-11-22T11:30:00+01:30', Date.UTC(2026, 10, 22, 10)],
    ['2028-02-29T00:00:00Z', Date.UTC(2028, 1, 29)],
    [1795341600000, 1795341600000],
    [0, 0],
  ])('reads %j', (value, ms) => {
    expect(parseTime(value, 'current_time')).toBe(ms);
  });

  it.each([
    ['2026-11-22'],
    ['2026-11-22T10:00:00'],
    ['Sun, 22 Nov 2026 10:00:00 GMT'],
    ['2026-02-29T00:00:00Z'],
    ['2026-11-22T24:00:00Z'],
    ['2026-13-01T00:00:00Z'],
    [1.5],
    [Number.MAX_SAFE_INTEGER],
    [null],
    [true],
    [''],
  ])('refuses %j with code 12', (value) => {
    expect(() => parseTime(value, 'current_time')).toThrow(ProtocolError);
    try {
      parseTime(value, 'current_time');
    } catch (err) {
      expect((err as ProtocolError).code).toBe(12);
    }
  });
});

describe('parseLine', () => {
  it('accepts an envelope', () => {
    const line = '{"src":"c1","dest":"n1","body":{"type":"init","msg_id":1,"node_id":"n1","node_ids":["n1"]}}';
    expect(parseLine(line)).toEqual({ ok: true, message: JSON.parse(line) });
  });

  it.each([
    ['{"src":"c1","dest":"n1","body":{"type":"x","msg_id":1', { src: 'c1', dest: 'n1', msgId: 1 }],
    ['garbage', {}],
    ['[1,2]', {}],
    ['{"dest":"n1","body":{"type":"x","msg_id":4}}', { dest: 'n1', msgId: 4 }],
    ['{"src":"c1","dest":"n1","body":{"msg_id":5}}', { src: 'c1', dest: 'n1', msgId: 5 }],
    ['{"src":"c1","dest":"n1","body":"x"}', { src: 'c1', dest: 'n1' }],
    ['{"src":"c1","dest":"n1","body":{"type":"a","msg_id":1},"x":{"msg_id":2', { src: 'c1', dest: 'n1' }],
  ])('refuses %j with code 12, reading what it can', (line, salvage) => {
    const r = parseLine(line);
    expect(r.ok).toBe(false);
    if (!r.ok) {
      expect(r.error.code).toBe(12);
      expect(r.salvage).toEqual(salvage);
    }
  });

  it('builds replies with in_reply_to after type', () => {
    expect(JSON.stringify(reply('n1', 'c1', 3, { type: 'init_ok' }))).toBe(
      '{"src":"n1","dest":"c1","body":{"type":"init_ok","in_reply_to":3}}',
    );
    expect(reply('n1', 'c1', undefined, { type: 'x' }).body).toEqual({ type: 'x' });
  });
});

describe('ChimeNode (in process)', () => {
  const T0 = Date.parse('2026-11-22T10:00:00.000Z');
  const make = () => {
    const logs: string[] = [];
    let n = 0;
    const node = new ChimeNode({ clock: new ManualClock(T0), newId: () => `job-${++n}`, log: (l) => logs.push(l) });
    const send = (body: Record<string, unknown>) => {
      const out = node.handleLine(JSON.stringify({ src: 'c1', dest: 'n1', body }));
      return out === null ? null : (JSON.parse(out) as { src: string; dest: string; body: Record<string, unknown> });
    };
    return { node, logs, send };
  };

  it('follows the wall clock until current_time, given as epoch ms or RFC 3339, sets it', () => {
    const { send } = make();
    expect(send({ type: 'schedule_job', msg_id: 1, task: 't', delay_ms: 1000 })!.body.scheduled_at).toBe('2026-11-22T10:00:01.000Z');
    const t = Date.parse('2030-01-01T00:00:00Z');
    expect(send({ type: 'schedule_job', msg_id: 2, task: 't', delay_ms: 1000, current_time: t })!.body.scheduled_at).toBe(
      '2030-01-01T00:00:01.000Z',
    );
    expect(
      send({ type: 'schedule_job', msg_id: 3, task: 't', delay_ms: 0, current_time: '2031-01-01T01:00:00+01:00' })!.body.scheduled_at,
    ).toBe('2031-01-01T00:00:00.000Z');
    // current_time on a message of another type moves the clock too
    send({ type: 'init', msg_id: 4, node_id: 'n1', node_ids: ['n1'], current_time: '2032-01-01T00:00:00Z' });
    expect(send({ type: 'schedule_job', msg_id: 5, task: 't', cron: '0 0 * * *' })!.body.next_run).toBe('2032-01-02T00:00:00.000Z');
  });

  it('ignores the service’s richer-schedule fields its protocol does not have (calendar, union, maxRuns, jitter, chains)', () => {
    const { send } = make();
    const plain = send({ type: 'schedule_job', msg_id: 1, task: 't', cron: '0 0 * * *' })!.body;
    const rich = send({
      type: 'schedule_job',
      msg_id: 2,
      task: 't',
      cron: '0 0 * * *',
      calendar: { key: 'de', roll: 'next' },
      schedule: { type: 'union', schedules: [] },
      maxRuns: 1,
      jitterMode: 'spread',
      then: [{ jobId: 'x', on: 'finished' }],
    })!.body;
    expect(rich.type).toBe('job_scheduled');
    expect(rich.next_run).toBe(plain.next_run);
  });

  it('refuses a bad current_time with code 12 and leaves the clock', () => {
    const { send, node } = make();
    expect(send({ type: 'execute_jobs', msg_id: 1, current_time: 'yesterday' })!.body).toMatchObject({ type: 'error', code: 12 });
    expect(node.clock.now()).toBe(T0);
  });

  it('answers unaddressable errors with nothing but a log line', () => {
    const { node, logs } = make();
    expect(node.handleLine('not json')).toBeNull();
    expect(node.handleLine('{"src":"c1","dest":"n1","body":{"type":"nope"}}')).toBeNull();
    expect(node.handleLine('')).toBeNull();
    expect(logs).toHaveLength(2);
    expect(logs[0]).toMatch(/error 12 .*not answered: no src/);
    expect(logs[1]).toMatch(/error 10 .*not answered: no msg_id/);
  });

  it('does not treat inherited property names as message types', () => {
    const { send } = make();
    expect(send({ type: 'constructor', msg_id: 1 })!.body).toMatchObject({ type: 'error', code: 10 });
    expect(send({ type: 'toString', msg_id: 2 })!.body).toMatchObject({ type: 'error', code: 10 });
  });

  it('answers an unexpected failure with code 13 and keeps serving', () => {
    let calls = 0;
    const node = new ChimeNode({
      clock: new ManualClock(T0),
      newId: () => {
        if (++calls === 1) throw new Error('boom');
        return `job-${calls}`;
      },
    });
    const line = JSON.stringify({ src: 'c1', dest: 'n1', body: { type: 'schedule_job', msg_id: 1, task: 't', delay_ms: 0 } });
    expect(JSON.parse(node.handleLine(line)!).body).toEqual({ type: 'error', in_reply_to: 1, code: 13, text: 'internal error: boom' });
    expect(JSON.parse(node.handleLine(line)!).body).toMatchObject({ type: 'job_scheduled', job_id: 'job-2' });
  });
});

describe('runNodeProtocol (in process)', () => {
  it('replies line by line, handles CRLF and a last line without a break, and resolves when input ends', async () => {
    const input = new PassThrough();
    const output = new PassThrough();
    const log = new PassThrough();
    let out = '';
    output.setEncoding('utf8').on('data', (c: string) => (out += c));
    let logged = '';
    log.setEncoding('utf8').on('data', (c: string) => (logged += c));
    const done = runNodeProtocol({ input, output, log, clock: new ManualClock(0), newId: () => 'j' });
    input.write('{"src":"c1","dest":"n1","body":{"type":"init","msg_id":1,"node_id":"n1","node_ids":["n1"]}}\r\n');
    input.end('{"src":"c1","dest":"n1","body":{"type":"schedule_job","msg_id":2,"task":"t","delay_ms":5}}');
    await done;
    expect(out).toBe(
      '{"src":"n1","dest":"c1","body":{"type":"init_ok","in_reply_to":1}}\n' +
        '{"src":"n1","dest":"c1","body":{"type":"job_scheduled","in_reply_to":2,"job_id":"j","scheduled_at":"1970-01-01T00:00:00.005Z"}}\n',
    );
    expect(logged).toMatch(/input ended after 2 lines, 2 replies, 1 jobs/);
  });
});
